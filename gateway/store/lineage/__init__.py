"""The lineage spine: datasets and their versions, run inputs, artifacts, metrics, task metrics."""
