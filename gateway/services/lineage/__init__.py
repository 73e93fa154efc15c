"""Lineage services: datasets, harvested outputs and metrics, walking the spine both ways."""
