"""Is the gateway healthy: can it reach its database and Slurm, and how fast do they answer.

With a remote submit host, Slurm is reached through an SSH hop; the Slurm
check then carries the hop's own check (``via``): where it goes, whether a
trivial command came back over it, and how long that took. With clusters
listed, each cluster's check carries the hop its commands go over: its own
``submit_host``'s, else the server-wide one's (each host probed once).

With several clusters listed in the site file (docs/clusters.md), each one is
checked (one partition listing each, which its slurmctld answers; the
clusters at once, so a dead one costs its timeout, not the sum) and reported
by name; what the check saw marks the cluster up or down in the registry, as
the refresh does. Each Slurm check also says when that cluster last answered
this process and, when it does not, since when it has not (the refresh may
have found it first). The
gateway is then ``ok`` while the database and at least one cluster answer:
one cluster being down degrades it (its queues refuse submissions), it does
not take the others' work down with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.adapters.ssh_hop import HopOf, SubmitHop
from gateway.core.clock import utcnow
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
    last_answered_at: datetime | None = None  # Slurm checks: when it last answered this process
    down_since: datetime | None = None  # Slurm checks: since when it has not answered (None: it answers)


@dataclass(frozen=True)
class Health:
    database: Check
    slurm: Check  # the first (default) cluster's
    clusters: dict[str, Check] = field(default_factory=dict)  # each listed cluster's; empty: one cluster

    @property
    def ok(self) -> bool:
        """True when the database and Slurm (through the hop, if any) answered; with several clusters,
        when the database and at least one cluster did."""
        if self.clusters:
            return self.database.ok and any(c.ok for c in self.clusters.values())
        return self.database.ok and self.slurm.ok

    @property
    def degraded(self) -> bool:
        """Something does not answer (a cluster among several, though the gateway is still ``ok``)."""
        return not self.ok or any(not c.ok for c in self.clusters.values())


class HealthService:
    def __init__(
        self,
        db: Database,
        slurm: SlurmBackend,
        hop: SubmitHop | None = None,
        clusters: SlurmClusters | None = None,
        *,
        hop_of: HopOf | None = None,
    ) -> None:
        self.db = db
        self.slurm = slurm
        self.hop = hop
        self.clusters = clusters
        self.hop_of = hop_of  # a listed cluster's SSH hop: its own submit host's, else ``hop``

    def check(self) -> Health:
        """One trivial database query, the SSH hop's probe (when there is one) and one Slurm partition
        listing, each timed; never raises a GatewayError (a failing dependency is reported in its
        ``Check``). Open to anyone: it reveals no data."""
        database = _timed(self.db.ping)
        # the clusters are a site option in the database: with the database down, the one cluster is asked
        if database.ok and self.clusters is not None and self.clusters.listed():
            return self._clusters(database)
        seen = partial(self._seen, None, record=database.ok)  # the registry's clusters are in the database
        if self.hop is None:
            return Health(database=database, slurm=seen(_timed(self.slurm.partitions)))
        probe = _timed(self.hop.probe)
        via = HopCheck(self.hop.describe(), probe.ok, probe.latency_ms, probe.error)
        return Health(database=database, slurm=seen(_through(self.slurm.partitions, via)))

    def _clusters(self, database: Check) -> Health:
        """Each listed cluster checked (all at once), and marked up or down in the registry by what it
        said."""
        assert self.clusters is not None
        backends = self.clusters.backends()
        hops = {c.name: self.hop_of(c) for c in self.clusters.listed()} if self.hop_of else {}
        distinct = list({id(hop): hop for hop in hops.values() if hop is not None}.values())
        with ThreadPoolExecutor(max_workers=min(8, len(backends)), thread_name_prefix="health") as pool:
            probed = list(pool.map(lambda hop: _timed(hop.probe), distinct))  # each host once
            via = {
                id(hop): HopCheck(hop.describe(), p.ok, p.latency_ms, p.error)
                for hop, p in zip(distinct, probed, strict=True)
            }
            timed = list(
                pool.map(
                    lambda item: _through(item[1].backend.partitions, via.get(id(hops.get(item[0])))),
                    backends,
                )
            )
        checks = {name: self._seen(name, check) for (name, _), check in zip(backends, timed, strict=True)}
        return Health(database=database, slurm=checks[self.clusters.first()], clusters=checks)

    def _seen(self, name: str | None, check: Check, *, record: bool = True) -> Check:
        """``check`` of cluster ``name`` (None: the first) recorded in the registry (up or down), with when
        it last answered and since when it has not; without ``record`` (or a registry), only its own
        answer's time."""
        if self.clusters is None or not record:
            return replace(check, last_answered_at=utcnow()) if check.ok else check
        name = name or self.clusters.first()
        if check.ok:
            self.clusters.mark_up(name)
        else:
            self.clusters.mark_down(name, check.error or "no answer")
        down = self.clusters.down(name)
        return replace(
            check, last_answered_at=self.clusters.last_answered(name), down_since=down.since if down else None
        )


def _through(listing: Callable[[], object], via: HopCheck | None) -> Check:
    """The timed Slurm ``listing``, over the SSH hop whose probe ``via`` gave (None: no hop); not asked
    when the hop failed, the check then saying so with the hop's error (its host, its key's fingerprint)."""
    if via is None:
        return _timed(listing)
    if not via.ok:
        return Check(False, None, f"not asked: the SSH hop to the submit host failed: {via.error}", via)
    return replace(_timed(listing), via=via)


def _timed(probe: Callable[[], object]) -> Check:
    started = time.perf_counter()
    try:
        probe()
    except GatewayError as exc:
        return Check(ok=False, latency_ms=None, error=str(exc))
    return Check(ok=True, latency_ms=round((time.perf_counter() - started) * 1000, 2))
