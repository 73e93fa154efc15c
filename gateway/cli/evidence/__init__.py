"""gw evidence: export and verify evidence bundles."""
