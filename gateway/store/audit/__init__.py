"""The append-only, hash-chained audit log."""
