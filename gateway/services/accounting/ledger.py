"""Accounting ingestion and pricing: every cluster's sacct records into the ledger, each priced.

``AccountingService.ingest`` reads ``sacct`` for each Slurm cluster in turn
(``LedgerSource``: gateway jobs and others, every user, every requeued
attempt, all states, steps) in windows of ``accounting_window_s`` that
overlap by ``accounting_overlap_s``, from ``since`` (or, without it, from
that cluster's oldest record still running, else its newest one seen, less
the overlap; a cluster with no records reads back
``accounting_lookback_days``) to now: one sacct per window per cluster, a
cluster that does not answer named in the counts while the others are read.
Records are keyed by (cluster, job id, submit): job ids are unique per
cluster only. Each record is linked to its gateway attempt on the same
cluster (``core/accounting/link.py``), else to the project whose Slurm account
it ran under, priced by the newest rate table (``core/accounting/cost.py``: its
cluster's own rates first, then the site's) and saved
by its slurmdbd identity, so a re-read changes nothing and a record that
changed (a job that ended since) is updated in place. ``reprice`` brings
every record to the newest rate table (after ``gw admin apply`` changed it).
``run_cost`` is one run's cost, attempt by attempt.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from gateway.adapters.slurm.protocol import SlurmLedger
from gateway.core.access.policy import require
from gateway.core.access.values import Principal
from gateway.core.accounting.cost import RateTable, RateVersion, price_all
from gateway.core.accounting.link import base_job_id, link_records
from gateway.core.accounting.records import ClusterIngest, IngestCounts, LedgerRecord, SacctRecord
from gateway.core.audit.entry import AuditEntry
from gateway.errors import GatewayError, SlurmError, SlurmUnavailable, SpecError, SpecIssue
from gateway.store.accounting.accounting import AccountingStore, Entry, RecordFilter
from gateway.store.runs.runs import RunStore

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
    cluster: str = ""  # the Slurm cluster it ran on (sacct's Cluster)
    rates: tuple[str, ...] = ()  # the ids of the rates that priced it ("gwlocal2:cpu/*@2026-11-01")


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


@dataclass(frozen=True)
class LedgerSource:
    """One Slurm cluster's accounting, as the ingest reads it (``gateway.wiring`` lists them)."""

    cluster: str  # the gateway's name of the cluster: the one its queues and attempts carry
    ledger: SlurmLedger  # that cluster's sacct (its backend: -M name or its own SLURM_CONF)
    default: bool = False  # the site's first cluster: attempts recorded without a cluster ran on it
    slurm_name: str | None = None  # what sacct prints as Cluster (None: learned from its first read)


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
        sources: Callable[[], Sequence[LedgerSource]] | None = None,
    ) -> None:
        """``sources`` lists the clusters to read (each cycle asks again: the site file may have changed
        them); without it, ``slurm`` is the one cluster, the default one."""
        self.store = store
        self.runs = runs
        self.slurm = slurm
        self.sources = sources or (lambda: [LedgerSource("", slurm, default=True)])
        self.window = timedelta(seconds=window_s)
        self.overlap = timedelta(seconds=overlap_s)
        self.lookback = timedelta(days=lookback_days)
        self.clock = clock
        self._slurm_names: dict[str, str] = {}  # gateway cluster name -> the Cluster its sacct printed

    def ingest_as(self, actor: Principal, since: datetime | None = None) -> IngestCounts:
        """``ingest`` for a site admin or the operator (Forbidden otherwise)."""
        require(actor, "site.admin")
        return self.ingest(since)

    def ingest(self, since: datetime | None = None) -> IngestCounts:
        """Read every cluster's sacct from ``since`` (aware; default: see the module docstring) to now
        and save it, one cluster after the other, one sacct per window per cluster.

        Returns the counts, summed and per cluster: distinct records read, new, updated in place,
        newly linked to a gateway attempt, and priced (those read, plus older ones re-priced by a
        newer rate table). A cluster whose sacct fails is named with its error in the counts and
        the others are read all the same; when every cluster fails, the first failure is raised
        (SlurmUnavailable/SlurmError; earlier windows stay saved). SpecError for a naive or future
        ``since``.
        """
        now = self.clock()
        if since is not None:
            self._checked_since(since, now)
        table = self._table()
        done: list[ClusterIngest] = []
        failures: list[GatewayError] = []
        priced = 0
        for source in self.sources():
            try:
                counts, fresh_priced = self._ingest_cluster(source, since, now, table)
            except (SlurmUnavailable, SlurmError) as exc:
                log.warning("accounting ingest of cluster %s: %s", source.cluster or "(default)", exc)
                failures.append(exc)
                done.append(ClusterIngest(source.cluster, error=str(exc)))
                continue
            done.append(counts)
            priced += fresh_priced
        if failures and len(failures) == len(done):
            raise failures[0]
        priced += self.reprice()
        return IngestCounts(
            read=sum(c.read for c in done),
            new=sum(c.new for c in done),
            updated=sum(c.updated for c in done),
            linked=sum(c.linked for c in done),
            priced=priced,
            clusters=tuple(done),
        )

    def _ingest_cluster(
        self, source: LedgerSource, since: datetime | None, now: datetime, table: RateTable | None
    ) -> tuple[ClusterIngest, int]:
        """One cluster's windows, from ``since`` or its own marks; its counts and how many it priced."""
        start = since.astimezone(UTC) if since is not None else self._start(source, now)
        read = new = updated = linked = priced = 0
        seen: set = set()
        lo = start
        while lo < now:
            hi = min(lo + self.window, now)
            batch = source.ledger.ledger(lo, hi)
            for problem in batch.problems:
                log.warning("accounting ingest of %s: %s", source.cluster or "the cluster", problem)
            # Every record of the window is saved, those an earlier window read too: the later read
            # is the newer (a job that ended in between); saving an unchanged one changes nothing.
            entries = self._entries(source, batch.records, table)
            counts = self.store.save(entries)
            fresh = [e for e in entries if e.record.key not in seen]
            seen.update(e.record.key for e in fresh)
            priced += sum(e.price is not None for e in fresh)
            read += len(fresh)
            new, updated, linked = new + counts.new, updated + counts.updated, linked + counts.linked
            if hi >= now:
                break
            lo = max(hi - self.overlap, lo + timedelta(seconds=1))
        name = source.cluster or self._slurm_names.get(source.cluster, "")
        return ClusterIngest(name, read, new, updated, linked), priced

    def reprice(self) -> int:
        """Price every record the newest rate table has not priced yet; returns how many were."""
        table = self._table()
        if table is None:
            return 0
        names = self._gateway_names() if table.clusters else {}
        done, after = 0, 0
        while True:
            batch = self.store.priced_with(table.version, after_id=after, limit=REPRICE_BATCH)
            if not batch:
                return done
            prices = price_all([r.record for r in batch], table, names)
            done += self.store.set_prices([(r.id, p) for r, p in zip(batch, prices, strict=True)])
            after = batch[-1].id

    def current_rates(self) -> RateVersion | None:
        """The newest rate table version; None before any was applied."""
        return self.store.current_rates()

    def set_rates(self, by: str, table: RateTable, audit: AuditEntry) -> RateVersion:
        """Store ``table`` as the next rate table version (audited), then re-price every record by it.

        Called by the site apply (``gw admin apply``) when the file's accounting section changed.
        """
        version = self.store.add_rate_version(table, by, audit=audit)
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

    @staticmethod
    def _checked_since(since: datetime, now: datetime) -> None:
        if since.tzinfo is None:
            issue = SpecIssue("since", "give a time zone (e.g. 2026-11-01T00:00:00Z)", str(since))
            raise SpecError([issue])
        if since > now:
            issue = SpecIssue("since", "lies in the future; give a past time", since.isoformat())
            raise SpecError([issue])

    def _start(self, source: LedgerSource, now: datetime) -> datetime:
        """Where a cluster's ingest starts without ``since``: its own oldest live record, else its newest,
        less the overlap; never before the lookback (nor when its sacct name is not known yet)."""
        floor = now - self.lookback
        name = source.slurm_name or self._slurm_names.get(source.cluster)
        if name is None:
            return floor
        marks = [t for t in (self.store.oldest_live_submit(name), self.store.newest_submit(name)) if t]
        if not marks:
            return floor
        return max(floor, min(marks) - self.overlap)

    def _table(self) -> RateTable | None:
        current = self.store.current_rates()
        return current.table if current else None

    def _entries(
        self, source: LedgerSource, records: list[SacctRecord], table: RateTable | None
    ) -> list[Entry]:
        """The records of one cluster's read, each linked (to an attempt on that cluster only) and priced."""
        name = self._slurm_name(source, records)
        ids = sorted({base_job_id(r) for r in records if r.cluster == name})
        # the attempts on this cluster, labelled with the Cluster its sacct prints, so that a record
        # links only to an attempt of its own cluster (job ids repeat across clusters)
        attempts = [
            replace(a, cluster=name)
            for a in self.store.gateway_attempts(ids, cluster=source.cluster, default=source.default)
        ]
        ours = {a.job_id for a in attempts}
        mine = [r for r in records if r.cluster == name and base_job_id(r) in ours]
        siblings = self.store.siblings(name, [r.job_id for r in mine])
        for r in mine:
            siblings.setdefault((r.cluster, r.job_id), []).append((r.submit_time, r.comment))
        links = link_records(records, attempts, siblings, self.store.projects_by_account())
        names = {name: source.cluster} if source.cluster else {}
        prices = price_all(records, table, names) if table is not None else [None] * len(records)
        return [Entry(r, link, p) for r, link, p in zip(records, links, prices, strict=True)]

    def _gateway_names(self) -> dict[str, str]:
        """The gateway's name of each cluster by the Cluster its sacct prints (given, or learned from a
        read; a cluster not known either way is taken to print its gateway name)."""
        return {
            (s.slurm_name or self._slurm_names.get(s.cluster) or s.cluster): s.cluster
            for s in self.sources()
            if s.cluster
        }

    def _slurm_name(self, source: LedgerSource, records: list[SacctRecord]) -> str:
        """The Cluster sacct prints for ``source`` (given, learned, or the one its records carry)."""
        known = source.slurm_name or self._slurm_names.get(source.cluster)
        printed = Counter(r.cluster for r in records)
        if known is None and printed:
            known = printed.most_common(1)[0][0]
            self._slurm_names[source.cluster] = known
        strays = sorted(c for c in printed if c != known)
        if strays:
            log.warning(
                "accounting ingest of %s (Cluster %s): sacct also printed records of %s; they are kept but "
                "linked to no attempt of this cluster",
                source.cluster or "the cluster",
                known,
                ", ".join(strays),
            )
        return known or source.cluster


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
            cluster=r.record.cluster,
            rates=tuple(dict.fromkeys(p.rate_id for p in r.price.parts)) if r.price else (),
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
