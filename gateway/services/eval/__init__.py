"""Evaluation services: suites, eval runs, ingest of their results, gates, reviews and eval lineage."""
