"""Report queries: priced accounting records and GPU telemetry summed per dimension."""
