"""Cluster facts with a short lifetime: one Slurm call serves every reader in that window.

``CachedSlurm`` wraps a ``SlurmBackend``. The cluster-wide reads that
people's pages and ``gw`` commands make (partitions, nodes, the live job
list, an account's usage this month) are answered from a copy at most
``ttl_s`` old; while one is being fetched, other readers of the same fact
wait for it instead of asking Slurm again (single flight). So the Slurm
calls per minute that watchers cause do not grow with their number. A
failure (Slurm does not answer) is remembered for the same window, so a
down controller is not asked again by every reader.

Everything that must be exact passes straight through: submissions, cancel,
the refresh cycle's status and accounting reads, the tag look-up. A sent
submission or a cancel through this object drops the cached job list and nodes (the
gateway changed them itself), but not ``node_sizes`` (what a job does not change);
``forget`` drops everything (the refresh cycle calls it when it saw jobs start or end).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from gateway.adapters.slurm.protocol import PreparedSubmit, SlurmBackend
from gateway.core.accounting.parse import LedgerRead
from gateway.core.slurm.records import AccountingRecord, JobStatus, NodeInfo, PartitionInfo
from gateway.errors import SlurmError

T = TypeVar("T")


@dataclass
class _Entry:
    value: Any
    error: SlurmError | None
    until: float  # time.monotonic() after which it is fetched again


class CachedSlurm:
    """A ``SlurmBackend`` whose cluster-wide reads are cached for ``ttl_s`` seconds."""

    def __init__(self, backend: SlurmBackend, *, ttl_s: float) -> None:
        self.backend = backend
        self.ttl_s = ttl_s
        self._entries: dict[Hashable, _Entry] = {}
        self._fetching: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    # -- exact: straight through ------------------------------------------------------

    def prepare_submit(
        self,
        *,
        tag: str,
        as_user: str | None = None,
        exclude_nodes: Sequence[str] = (),
        comment: str | None = None,
        mail_user: str | None = None,
        script_path: str | None = None,
    ) -> PreparedSubmit:
        """``SlurmBackend.prepare_submit``, straight through; once sent, the cached job list and nodes
        are dropped."""
        prepared = self.backend.prepare_submit(
            tag=tag,
            as_user=as_user,
            exclude_nodes=exclude_nodes,
            comment=comment,
            mail_user=mail_user,
            script_path=script_path,
        )
        return _Forgetting(self, prepared)

    def test_only(
        self,
        script: str,
        *,
        as_user: str | None = None,
        comment: str | None = None,
        mail_user: str | None = None,
    ) -> str:
        """``SlurmBackend.test_only``, straight through (it changes nothing)."""
        return self.backend.test_only(script, as_user=as_user, comment=comment, mail_user=mail_user)

    def cancel(self, job_id: str) -> None:
        """``SlurmBackend.cancel``, straight through; then the cached job list and nodes are dropped."""
        try:
            self.backend.cancel(job_id)
        finally:
            self.forget(("jobs",), ("nodes",))

    def status(self, job_ids: Sequence[str]) -> list[JobStatus]:
        """``SlurmBackend.status``, straight through (the refresh needs it exact)."""
        return self.backend.status(job_ids)

    def accounting(self, job_ids: Sequence[str]) -> list[AccountingRecord]:
        """``SlurmBackend.accounting``, straight through (the refresh needs it exact)."""
        return self.backend.accounting(job_ids)

    def ledger(self, start: datetime, end: datetime) -> LedgerRead:
        """``SlurmLedger.ledger``, straight through (the accounting ingest must see every record)."""
        return self.backend.ledger(start, end)  # type: ignore[attr-defined]  # SlurmCLI and SlurmRest have it

    def find_by_tag(self, tag: str, *, since: datetime | None = None) -> list[str]:
        """``SlurmBackend.find_by_tag``, straight through (it decides whether to submit again)."""
        return self.backend.find_by_tag(tag, since=since)

    # -- cluster facts: cached ------------------------------------------------------------

    def jobs(
        self, *, accounts: Sequence[str] = (), partitions: Sequence[str] = (), users: Sequence[str] = ()
    ) -> list[JobStatus]:
        """Every live job, from one cached ``squeue`` of all of them, narrowed here by the filters."""
        every: list[JobStatus] = self._get(("jobs",), self.backend.jobs)
        return [
            j
            for j in every
            if (not accounts or j.account in accounts)
            and (not partitions or j.partition in partitions)
            and (not users or j.user in users)
        ]

    def comments(self) -> list[tuple[str, str]]:
        """``SlurmBackend.comments``, straight through (the refresh asks once a cycle at most)."""
        return self.backend.comments()

    def usage(self, accounts: Sequence[str], *, since: datetime) -> list[AccountingRecord]:
        """``SlurmBackend.usage``, cached per (accounts, since) for ``ttl_s``."""
        key = ("usage", tuple(sorted(accounts)), since)
        return self._get(key, lambda: self.backend.usage(accounts, since=since))

    def partitions(self) -> list[PartitionInfo]:
        """``SlurmBackend.partitions``, cached for ``ttl_s``."""
        return self._get(("partitions",), self.backend.partitions)

    def nodes(self) -> list[NodeInfo]:
        """``SlurmBackend.nodes``, cached for ``ttl_s``."""
        return self._get(("nodes",), self.backend.nodes)

    def node_sizes(self) -> list[NodeInfo]:
        """``ClusterSlurm.node_sizes``: ``nodes`` cached for ``ttl_s`` under a key of its own, which a
        sent submission or a cancel leaves (admission reads it for every run: one ``scontrol show
        node`` per submitted run, otherwise, on the single-run path)."""
        return self._get(("node sizes",), self.backend.nodes)

    def forget(self, *keys: Hashable) -> None:
        """Drop the cached facts of ``keys`` (all when none is given): the next read asks Slurm."""
        with self._lock:
            if not keys:
                self._entries.clear()
            for key in keys:
                self._entries.pop(key, None)

    def _get(self, key: Hashable, fetch: Callable[[], T]) -> T:
        entry = self._fresh(key)
        if entry is None:
            with self._lock:
                fetching = self._fetching.setdefault(key, threading.Lock())
            with fetching:  # one reader fetches; the others wait for it, then read its answer
                entry = self._fresh(key)
                if entry is None:
                    entry = self._fetch(key, fetch)
        if entry.error is not None:
            raise entry.error
        return entry.value

    def _fresh(self, key: Hashable) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
        return entry if entry is not None and entry.until > time.monotonic() else None

    def _fetch(self, key: Hashable, fetch: Callable[[], Any]) -> _Entry:
        try:
            entry = _Entry(fetch(), None, 0.0)
        except SlurmError as exc:
            entry = _Entry(None, exc, 0.0)
        entry.until = time.monotonic() + self.ttl_s
        with self._lock:
            self._entries[key] = entry
        return entry


class _Forgetting:
    """A prepared submission of the backend behind ``CachedSlurm``; sending it drops the cached reads."""

    def __init__(self, cache: CachedSlurm, prepared: PreparedSubmit) -> None:
        self.cache = cache
        self.prepared = prepared

    def send(self, script: str) -> str:
        """``PreparedSubmit.send``, then the cached job list and nodes are dropped."""
        try:
            return self.prepared.send(script)
        finally:
            self.cache.forget(("jobs",), ("nodes",))

    def abandon(self) -> None:
        """``PreparedSubmit.abandon``, straight through."""
        self.prepared.abandon()
