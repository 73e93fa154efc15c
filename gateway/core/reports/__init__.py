"""Reports over the accounting records: rows, periods, and their renderings (table, CSV, JSON, HTML)."""
