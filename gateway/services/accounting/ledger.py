"""Accounting ingestion and pricing: the cluster's sacct records into the ledger, each priced.

``AccountingService.ingest`` reads ``sacct`` for the whole cluster (gateway
jobs and others, every user, every requeued attempt, all states, steps) in
windows of ``accounting_window_s`` that overlap by ``accounting_overlap_s``,
from ``since`` (or, without it, from the oldest record still running, else
the newest one seen, less the overlap; an empty ledger reads back
``accounting_lookback_days``) to now. Each record is linked to its gateway
attempt (``core/accounting/link.py``), else to the project whose Slurm account
it ran under, priced by the newest rate table (``core/accounting/cost.py``) and saved
by its slurmdbd identity, so a re-read changes nothing and a record that
changed (a job that ended since) is updated in place. ``reprice`` brings
every record to the newest rate table (after ``gw admin apply`` changed it).
``run_cost`` is one run's cost, attempt by attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gateway.adapters.slurm.protocol import SlurmLedger
from gateway.core.access.policy import require
from gateway.core.accounting.cost import RateTable, RateVersion, price_all
from gateway.core.accounting.link import base_job_id, link_records
from gateway.core.accounting.records import IngestCounts, LedgerRecord, SacctRecord
from gateway.core.audit.entry import AuditEntry
from gateway.core.domain import Principal
from gateway.errors import SpecError, SpecIssue
from gateway.store.accounting import AccountingStore, Entry, RecordFilter
from gateway.store.runs import RunStore

log = logging.getLogger(__name__)
REPRICE_BATCH = 5000


@dataclass(frozen=True)
class AttemptCost:
    """One accounting record of a run (an attempt, or a Slurm requeue of one), priced."""

    attempt: int | None  # the gateway attempt number (None: a record not linked to one)
    job_id: str
    state: str
    elapsed_s: int
    gpu_hours: float
    cpu_hours: float
    cost: float | None  # None: not priced (no rate table yet)
    rate_version: int | None
    failed: bool
    cancelled: bool = False  # ended CANCELLED: someone asked for it, which is no failure


@dataclass(frozen=True)
class RunCost:
    """A run's cost: every accounting record of its attempts, and the totals."""

    run_id: str
    currency: str | None
    total: float  # 0 when not priced
    failed_total: float  # the part spent on records that failed (failed, timed out, requeued ...)
    attempts: list[AttemptCost]
    priced: bool  # every record is priced
    note: str
    cancelled_total: float = 0.0  # the part spent on records that were cancelled (not failures)


class AccountingService:
    def __init__(
        self,
        store: AccountingStore,
        runs: RunStore,
        slurm: SlurmLedger,
        *,
        window_s: float,
        overlap_s: float,
        lookback_days: float,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.runs = runs
        self.slurm = slurm
        self.window = timedelta(seconds=window_s)
        self.overlap = timedelta(seconds=overlap_s)
        self.lookback = timedelta(days=lookback_days)
        self.clock = clock

    def ingest_as(self, actor: Principal, since: datetime | None = None) -> IngestCounts:
        """``ingest`` for a site admin or the operator (Forbidden otherwise)."""
        require(actor, "site.admin")
        return self.ingest(since)

    def ingest(self, since: datetime | None = None) -> IngestCounts:
        """Read sacct from ``since`` (aware; default: see the module docstring) to now and save it.

        Returns the counts: distinct records read, new, updated in place, newly linked to a gateway
        attempt, and priced (those read, plus older ones re-priced by a newer rate table).
        SpecError for a naive or future ``since``; SlurmUnavailable/SlurmError when sacct fails
        (nothing of that window is saved; earlier windows stay saved).
        """
        now = self.clock()
        start = self._start(since, now)
        table = self._table()
        read = new = updated = linked = priced = 0
        seen: set = set()
        lo = start
        while lo < now:
            hi = min(lo + self.window, now)
            batch = self.slurm.ledger(lo, hi)
            for problem in batch.problems:
                log.warning("accounting ingest: %s", problem)
            # Every record of the window is saved, those an earlier window read too: the later read
            # is the newer (a job that ended in between); saving an unchanged one changes nothing.
            entries = self._entries(batch.records, table)
            counts = self.store.save(entries)
            fresh = [e for e in entries if e.record.key not in seen]
            seen.update(e.record.key for e in fresh)
            priced += sum(e.price is not None for e in fresh)
            read += len(fresh)
            new, updated, linked = new + counts.new, updated + counts.updated, linked + counts.linked
            if hi >= now:
                break
            lo = max(hi - self.overlap, lo + timedelta(seconds=1))
        priced += self.reprice()
        return IngestCounts(read, new, updated, linked, priced)

    def reprice(self) -> int:
        """Price every record the newest rate table has not priced yet; returns how many were."""
        table = self._table()
        if table is None:
            return 0
        done, after = 0, 0
        while True:
            batch = self.store.priced_with(table.version, after_id=after, limit=REPRICE_BATCH)
            if not batch:
                return done
            prices = price_all([r.record for r in batch], table)
            done += self.store.set_prices([(r.id, p) for r, p in zip(batch, prices, strict=True)])
            after = batch[-1].id

    def current_rates(self) -> RateVersion | None:
        """The newest rate table version; None before any was applied."""
        return self.store.current_rates()

    def set_rates(self, by: str, table: RateTable, sha256: str, audit: AuditEntry) -> RateVersion:
        """Store ``table`` as the next rate table version (audited), then re-price every record by it.

        Called by the site apply (``gw admin apply``) when the file's accounting section changed.
        """
        version = self.store.add_rate_version(table, sha256, by, audit=audit)
        self.reprice()
        return version

    def run_cost(self, actor: Principal, run_id: str) -> RunCost:
        """The cost of run ``run_id``, one entry per accounting record of its attempts, oldest first.

        Readable by whoever may read the run (NotFound otherwise, as for the run itself).
        """
        run = self.runs.get_run(run_id)
        require(actor, "run.read", run.project, hide=True)
        return self.cost_of(run_id)

    def cost_of(self, run_id: str) -> RunCost:
        """``run_cost`` without the permission check, for a service that checked already (evidence)."""
        return run_cost(run_id, self.store.records(RecordFilter(run_id=run_id)))

    def _start(self, since: datetime | None, now: datetime) -> datetime:
        if since is not None:
            if since.tzinfo is None:
                issue = SpecIssue("since", "give a time zone (e.g. 2026-11-01T00:00:00Z)", str(since))
                raise SpecError([issue])
            if since > now:
                issue = SpecIssue("since", "lies in the future; give a past time", since.isoformat())
                raise SpecError([issue])
            return since.astimezone(UTC)
        floor = now - self.lookback
        marks = [t for t in (self.store.oldest_live_submit(), self.store.newest_submit()) if t is not None]
        if not marks:
            return floor
        return max(floor, min(marks) - self.overlap)

    def _table(self) -> RateTable | None:
        current = self.store.current_rates()
        return current.table if current else None

    def _entries(self, records: list[SacctRecord], table: RateTable | None) -> list[Entry]:
        attempts = self.store.gateway_attempts(sorted({base_job_id(r) for r in records}))
        ours = {a.job_id for a in attempts}
        mine = [r for r in records if base_job_id(r) in ours]
        siblings = self.store.siblings([r.job_id for r in mine])
        for r in mine:
            siblings.setdefault(r.job_id, []).append((r.submit_time, r.comment))
        links = link_records(records, attempts, siblings, self.store.projects_by_account())
        prices = price_all(records, table) if table is not None else [None] * len(records)
        return [Entry(r, link, p) for r, link, p in zip(records, links, prices, strict=True)]


def run_cost(run_id: str, records: list[LedgerRecord]) -> RunCost:
    """A run's cost from its ledger records (pure; see ``RunCost``)."""
    attempts = [
        AttemptCost(
            attempt=r.link.attempt_number,
            job_id=r.record.job_id,
            state=r.record.state,
            elapsed_s=r.record.elapsed_s,
            gpu_hours=r.record.gpu_hours,
            cpu_hours=r.record.cpu_hours,
            cost=r.price.cost if r.price else None,
            rate_version=r.price.rate_version if r.price else None,
            failed=r.record.failed,
            cancelled=r.record.cancelled,
        )
        for r in records
    ]
    priced = bool(records) and all(r.price is not None for r in records)
    currencies = sorted({r.price.currency for r in records if r.price})
    total = sum(a.cost or 0.0 for a in attempts)
    failed_total = sum(a.cost or 0.0 for a in attempts if a.failed)
    cancelled_total = sum(a.cost or 0.0 for a in attempts if a.cancelled)
    if not records:
        note = "no accounting records yet: `gw admin accounting ingest` (or the periodic ingest) reads them"
    elif not priced:
        note = "not priced yet: no rate table has been applied (the accounting section of the site file)"
    else:
        versions = sorted({a.rate_version for a in attempts if a.rate_version is not None})
        note = f"priced by rate version {', '.join(map(str, versions))}"
    return RunCost(
        run_id=run_id,
        currency=currencies[0] if currencies else None,
        total=total,
        failed_total=failed_total,
        cancelled_total=cancelled_total,
        attempts=attempts,
        priced=priced,
        note=note,
    )
