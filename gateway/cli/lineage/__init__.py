"""gw trace, gw compare and gw dataset: lineage, and how it is shown."""
