"""Benchmarks, run by `make bench`: each measures the gateway against a raw reference in one process."""

from __future__ import annotations

from gateway.adapters.runner import LocalRunner


class CountingRunner(LocalRunner):
    """The real local runner, counting the programs it starts (Slurm calls per refresh cycle)."""

    def __init__(self) -> None:
        self.calls = 0

    def run(self, argv, **kwargs):  # noqa: ANN001, ANN003 - LocalRunner.run's own signature
        self.calls += 1
        return super().run(argv, **kwargs)
