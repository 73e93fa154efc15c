"""Benchmarks, run by `make bench`: each measures the gateway against a raw reference in one process."""

from __future__ import annotations

import uuid

from gateway.adapters.runner import LocalRunner
from gateway.core.runs.values import NewRun
from gateway.core.slurm.tags import attempt_tag
from gateway.core.spec.run_spec import build_spec


class CountingRunner(LocalRunner):
    """The real local runner, counting the programs it starts (Slurm calls per refresh cycle)."""

    def __init__(self) -> None:
        self.calls = 0

    def run(self, argv, **kwargs):  # noqa: ANN001, ANN003 - LocalRunner.run's own signature
        self.calls += 1
        return super().run(argv, **kwargs)

    def start(self, argv, **kwargs):  # noqa: ANN001, ANN003 - LocalRunner.start's own signature
        self.calls += 1
        return super().start(argv, **kwargs)


def bench_run(run_dir: str = "/tmp") -> NewRun:
    """A run record for the store alone (no Slurm job behind it until one is recorded)."""
    run_id = f"r-{uuid.uuid4().hex[:16]}"
    spec = build_spec({"name": "bench", "project": "bench", "queue": "cpu", "command": "true"})
    return NewRun(
        id=run_id,
        spec=spec,
        submitter="bench",
        os_user="root",
        script="#!/bin/bash\ntrue\n",
        script_sha256="0" * 64,
        template_name="single.sbatch.j2",
        template_version="bench",
        run_dir=run_dir,
        first_tag=attempt_tag(run_id, 1),
    )


def take_down(services, account: str, *, timeout_s: float = 180) -> None:  # noqa: ANN001 - Services
    """Cancel every job of ``account``, then prune the site (which removes the account from Slurm).

    Slurm refuses to remove an association while it still counts jobs as active, and after a burst
    slurmdbd lags behind slurmctld: the prune is retried until it goes through or ``timeout_s`` passes.
    """
    import subprocess
    import time

    from gateway.core.access.values import Principal
    from gateway.core.site.schema import parse_site
    from gateway.errors import GatewayError

    subprocess.run(["scancel", f"--account={account}"], check=False, capture_output=True)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            services.site.apply(Principal.operator(), parse_site("users: []\nprojects: []\n"), prune=True)
            return
        except GatewayError as exc:
            if time.monotonic() > deadline:
                raise
            print(f"waiting for Slurm to let account {account} go: {str(exc)[:120]}")
            time.sleep(3)
