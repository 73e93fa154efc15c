"""Accounting: sacct records, their links to attempts, cost math and GPU telemetry summaries."""
