"""The gateway: a Slurm-backed batch gateway for model training."""

__version__ = "0.1.0"
