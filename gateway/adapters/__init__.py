"""Adapters: the gateway's seams to outside systems (Slurm, database, NVML)."""
