"""The lineage spine: dataset manifests and references, training metrics, run comparison."""
