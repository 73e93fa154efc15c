"""The Slurm seam: a protocol, and its implementation over the Slurm CLI."""

from gateway.adapters.slurm.cli import SlurmCLI
from gateway.adapters.slurm.protocol import SlurmBackend

__all__ = ["SlurmBackend", "SlurmCLI"]
