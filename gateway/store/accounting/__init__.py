"""The accounting ledger (sacct records, rate table versions) and GPU telemetry rows."""
