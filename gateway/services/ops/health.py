"""Is the gateway healthy: can it reach its database and Slurm, and how fast do they answer.

With a remote submit host, Slurm is reached through an SSH hop; the Slurm
check then carries the hop's own check (``via``): where it goes, whether a
trivial command came back over it, and how long that took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.adapters.ssh_hop import SubmitHop
from gateway.errors import GatewayError
from gateway.store import Database


@dataclass(frozen=True)
class HopCheck:
    hop: str  # where it goes and how it logs in: ssh://svc@login1:22 (per_user_key)
    ok: bool
    latency_ms: float | None  # one trivial command there and back; None when it failed
    error: str | None = None


@dataclass(frozen=True)
class Check:
    ok: bool
    latency_ms: float | None  # None when it did not answer
    error: str | None = None
    via: HopCheck | None = None  # the SSH hop Slurm is reached through; None on the login node itself


@dataclass(frozen=True)
class Health:
    database: Check
    slurm: Check

    @property
    def ok(self) -> bool:
        """True when both the database and Slurm (through the hop, if any) answered."""
        return self.database.ok and self.slurm.ok


class HealthService:
    def __init__(self, db: Database, slurm: SlurmBackend, hop: SubmitHop | None = None) -> None:
        self.db = db
        self.slurm = slurm
        self.hop = hop

    def check(self) -> Health:
        """One trivial database query, the SSH hop's probe (when there is one) and one Slurm partition
        listing, each timed; never raises a GatewayError (a failing dependency is reported in its
        ``Check``). Open to anyone: it reveals no data."""
        database = _timed(self.db.ping)
        if self.hop is None:
            return Health(database=database, slurm=_timed(self.slurm.partitions))
        probe = _timed(self.hop.probe)
        via = HopCheck(self.hop.describe(), probe.ok, probe.latency_ms, probe.error)
        if not probe.ok:
            slurm = Check(
                False, None, f"not asked: the SSH hop to the submit host failed: {probe.error}", via
            )
        else:
            slurm = Check(**{**_timed(self.slurm.partitions).__dict__, "via": via})
        return Health(database=database, slurm=slurm)


def _timed(probe: Callable[[], object]) -> Check:
    started = time.perf_counter()
    try:
        probe()
    except GatewayError as exc:
        return Check(ok=False, latency_ms=None, error=str(exc))
    return Check(ok=True, latency_ms=round((time.perf_counter() - started) * 1000, 2))
