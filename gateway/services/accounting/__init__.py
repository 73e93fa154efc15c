"""Accounting services: the sacct ledger, GPU telemetry, reports and usage against caps."""
