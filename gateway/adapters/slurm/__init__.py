"""The Slurm seam: a protocol, its backends over the Slurm CLI and over slurmrestd, and the cache."""

from gateway.adapters.slurm.cli import SlurmCLI
from gateway.adapters.slurm.protocol import SlurmBackend

__all__ = ["SlurmBackend", "SlurmCLI"]
