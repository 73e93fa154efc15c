"""gw cost, quota, queue, audit, report and telemetry: accounting records and usage."""
