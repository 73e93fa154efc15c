"""Retention: the site file's policies, holds, the sweeper, storage in the reports (docs/retention.md)."""
