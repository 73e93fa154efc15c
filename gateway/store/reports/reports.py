"""Report queries: priced accounting records summed per dimension value, in SQL (``GROUP BY``).

A record counts in a period when it *started* in it (``start_time`` in
``[start, end)``), so every record is in exactly one period of a partition
of time and report totals add up across months. Never-started records
(pending, cancelled in the queue) held nothing and are not counted.

The dimension a record is grouped under:

- project: the record's attributed project (a gateway attempt's, or the one whose Slurm account
  it ran under); unattributed ones as ``(account X)``;
- user: the Slurm user;
- queue: ``project/queue`` of the gateway run, ``(partition P on C)`` for jobs not sent by the gateway;
- run: the gateway run id, ``(not a gateway run)`` for the rest;
- cluster: the Slurm cluster the record ran on (sacct's Cluster: every record has one);
- release: ``project/model@version`` for every release whose artifact the record's run made, or a
  rerun of it, or evaluated: one record may count under several releases of one artifact.

Only ``Sums`` leave this module. Medians and 90th percentiles of the wait (eligible to start) are
nearest-rank, by window functions (``ROW_NUMBER``/``COUNT`` over the group), on both databases.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    Float,
    String,
    and_,
    case,
    cast,
    func,
    literal,
    or_,
    select,
    tuple_,
    union,
)
from sqlalchemy.sql.elements import ColumnElement

from gateway.core.accounting.records import CANCELLED_STATE
from gateway.core.reports.periods import Period
from gateway.core.reports.rows import Dimension, Sums
from gateway.store.accounting.models import AccountingRecordRow
from gateway.store.db import Database
from gateway.store.eval.models import EvalRunRow
from gateway.store.models import RunRow
from gateway.store.releases.models import ModelRow, ReleaseRow
from gateway.store.reports.telemetry import (
    UTIL_BIN_PCT,
    telemetry_measures,
    telemetry_of_attempts,
    utilisation_bins,
    with_telemetry,
)

REC = AccountingRecordRow.__table__
RUNS = RunRow.__table__
RELEASES = ReleaseRow.__table__
MODELS = ModelRow.__table__
EVAL_RUNS = EvalRunRow.__table__
NOT_A_GATEWAY_RUN = "(not a gateway run)"


Wait = tuple[float | None, float | None]  # (median, p90) in seconds
Waits = dict[str, Wait]


@dataclass(frozen=True)
class Summed:
    """What ``ReportStore.summed`` found: per-value sums, the total, and what priced them."""

    groups: dict[str, Sums]
    total: Sums
    rate_versions: list[str]
    currencies: list[str]


@dataclass(frozen=True)
class Scope:
    """Which records a report may count: those that started in ``period``, of ``projects``
    (None: every record, attributed or not, for admins), optionally only ``project``."""

    period: Period
    projects: frozenset[str] | None


def _where(scope: Scope) -> list[ColumnElement[bool]]:
    conds = [REC.c.start_time >= scope.period.start, REC.c.start_time < scope.period.end]
    if scope.projects is not None:
        conds.append(REC.c.project.in_(sorted(scope.projects)) if scope.projects else literal(False))
    return conds


def _project_key() -> ColumnElement[str]:
    return func.coalesce(REC.c.project, "(account " + func.coalesce(REC.c.account, "?") + ")")


def _keyed(by: Dimension) -> tuple[ColumnElement[str], Any]:
    """The key expression of ``by`` and the FROM clause it needs (records, joined as the key needs)."""
    if by == "project":
        return _project_key(), REC
    if by == "user":
        return REC.c.user_name, REC
    if by == "run":
        return func.coalesce(REC.c.run_id, NOT_A_GATEWAY_RUN), REC
    if by == "cluster":
        return REC.c.cluster, REC
    if by == "queue":
        gateway = RUNS.c.project + "/" + RUNS.c.queue
        # partition names repeat across clusters (cpu on both): the cluster tells them apart
        other = "(partition " + func.coalesce(REC.c.partition, "?") + " on " + REC.c.cluster + ")"
        key = case((RUNS.c.id.is_not(None), gateway), else_=other)
        return key, REC.outerjoin(RUNS, RUNS.c.id == REC.c.run_id)
    if by == "release":
        behind = _runs_behind_releases()
        return behind.c.release, REC.join(behind, behind.c.run_id == REC.c.run_id)
    raise ValueError(f"unknown dimension {by!r}")


def _runs_behind_releases() -> Any:
    """(release, run_id) for every run behind a release's artifact: the run that made it, its reruns
    (and theirs, recursively), and every eval run of the artifact."""
    key = MODELS.c.project + "/" + MODELS.c.name + "@" + cast(RELEASES.c.version, String)
    made = (
        select(key.label("release"), RELEASES.c.run_id.label("run_id"))
        .select_from(RELEASES.join(MODELS, MODELS.c.id == RELEASES.c.model_id))
        .cte("behind", recursive=True)
    )
    reruns = select(made.c.release, RUNS.c.id).select_from(
        RUNS.join(made, RUNS.c.parent_run_id == made.c.run_id)
    )
    lineage = made.union(reruns)
    evals = select(key.label("release"), EVAL_RUNS.c.run_id.label("run_id")).select_from(
        RELEASES.join(MODELS, MODELS.c.id == RELEASES.c.model_id).join(
            EVAL_RUNS, EVAL_RUNS.c.artifact_sha256 == RELEASES.c.artifact_sha256
        )
    )
    return union(select(lineage.c.release, lineage.c.run_id), evals).subquery("release_runs")


def _measures() -> list[Any]:
    # a cancellation is counted apart from failures; a record stored before that rule has
    # failed true for CANCELLED too, so the state decides here
    cancelled = and_(REC.c.ended.is_(True), REC.c.state == CANCELLED_STATE)
    failed = and_(REC.c.failed.is_(True), REC.c.state != CANCELLED_STATE)
    cost = func.coalesce(REC.c.cost, 0.0)
    return [
        func.count().label("records"),
        func.sum(case((failed, 1), else_=0)).label("failed"),
        func.sum(REC.c.gpu_hours).label("gpu_hours"),
        func.sum(REC.c.cpu_hours).label("cpu_hours"),
        func.sum(cost).label("cost"),
        func.sum(case((failed, cost), else_=0.0)).label("cost_failed"),
        func.sum(case((failed, REC.c.gpu_hours), else_=0.0)).label("gpu_hours_failed"),
        func.sum(case((cancelled, 1), else_=0)).label("cancelled"),
        func.sum(case((cancelled, cost), else_=0.0)).label("cost_cancelled"),
        func.sum(case((cancelled, REC.c.gpu_hours), else_=0.0)).label("gpu_hours_cancelled"),
    ]


def _sums(row: Any) -> Sums:
    return Sums(
        records=int(row.records or 0),
        failed=int(row.failed or 0),
        gpu_hours=float(row.gpu_hours or 0.0),
        cpu_hours=float(row.cpu_hours or 0.0),
        cost=float(row.cost or 0.0),
        cost_failed=float(row.cost_failed or 0.0),
        gpu_hours_failed=float(row.gpu_hours_failed or 0.0),
        cancelled=int(row.cancelled or 0),
        cost_cancelled=float(row.cost_cancelled or 0.0),
        gpu_hours_cancelled=float(row.gpu_hours_cancelled or 0.0),
        telemetry_gpu_hours=float(getattr(row, "telemetry_gpu_hours", 0.0) or 0.0),
        util_gpu_hours=float(getattr(row, "util_gpu_hours", 0.0) or 0.0),
        idle_gpu_hours=float(getattr(row, "idle_gpu_hours", 0.0) or 0.0),
    )


class ReportStore:
    """Report sums over ``accounting_records`` (and runs, releases, eval runs for the dimensions)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def _seconds(self, later: Any, earlier: Any) -> ColumnElement[Any]:
        """``later - earlier`` in seconds, in this database's own date arithmetic."""
        if self.db.dialect == "sqlite":
            return (func.julianday(later) - func.julianday(earlier)) * 86400.0
        return func.extract("epoch", later - earlier)

    def summed(self, by: Dimension, scope: Scope, *, waits: bool = False, telemetry: bool = False) -> Summed:
        """One ``Sums`` per value of ``by`` among the records of ``scope``, their total (each record
        once), and the rate versions and currencies that priced them; with ``waits`` the wait median
        and p90 per value and overall too; with ``telemetry`` the GPU telemetry sums. One ``GROUP BY``
        (two for a release report, whose groups may share records), and one percentile query with
        ``waits``."""
        key, source = _keyed(by)
        measures = _measures()
        if telemetry:
            joined = telemetry_of_attempts()
            source, measures = with_telemetry(source, joined), [*measures, *telemetry_measures(joined)]
        query = (
            select(key.label("k"), REC.c.rate_version, REC.c.currency, *measures)
            .select_from(source)
            .where(*_where(scope))
            .group_by(key, REC.c.rate_version, REC.c.currency)
        )
        groups: dict[str, Sums] = {}
        versions: set[str] = set()
        currencies: set[str] = set()
        with self.db.session() as session:
            for row in session.execute(query):
                groups[row.k] = groups[row.k].plus(_sums(row)) if row.k in groups else _sums(row)
                if row.rate_version is not None:
                    versions.add(str(row.rate_version))
                if row.currency:
                    currencies.add(row.currency)
        overlapping = by == "release"
        total = self._total(scope, telemetry=telemetry) if overlapping else _added(groups.values())
        if waits:
            per_key, overall = self._waits(key, source, scope, overall=not overlapping)
            if overlapping:
                overall = self._waits(literal("*"), REC, scope, overall=False)[0].get("*", (None, None))
            groups = {
                k: replace(
                    s,
                    wait_median_s=per_key.get(k, (None, None))[0],
                    wait_p90_s=per_key.get(k, (None, None))[1],
                )
                for k, s in groups.items()
            }
            total = replace(total, wait_median_s=overall[0], wait_p90_s=overall[1])
        return Summed(groups, total, sorted(versions, key=_version_order), sorted(currencies))

    def _total(self, scope: Scope, *, telemetry: bool) -> Sums:
        source, measures = REC, _measures()
        if telemetry:
            joined = telemetry_of_attempts()
            source, measures = with_telemetry(source, joined), [*measures, *telemetry_measures(joined)]
        query = select(*measures).select_from(source).where(*_where(scope))
        with self.db.session() as session:
            return _sums(session.execute(query).one())

    def _waits(self, key: Any, source: Any, scope: Scope, *, overall: bool) -> tuple[Waits, Wait]:
        """Nearest-rank median and p90 of eligible-to-start seconds per key (records with both times),
        and over all of them when ``overall`` (else (None, None))."""
        wait = self._seconds(REC.c.start_time, REC.c.eligible_time)
        conds = (*_where(scope), REC.c.eligible_time.is_not(None))
        if self.db.dialect == "postgresql":
            return self._waits_pg(key, source, conds, wait, overall)
        windows = [
            func.row_number().over(partition_by=key, order_by=wait).label("rn"),
            func.count().over(partition_by=key).label("n"),
        ]
        if overall:
            windows += [func.row_number().over(order_by=wait).label("ra"), func.count().over().label("na")]
        inner = select(key.label("k"), cast(wait, Float).label("w"), *windows).select_from(source)
        c = inner.where(*conds).subquery().c
        # ceil(0.5 n) and ceil(0.9 n) in integer arithmetic
        marks = [c.rn == (c.n + 1) // 2, c.rn == (9 * c.n + 9) // 10]
        if overall:
            marks += [c.ra == (c.na + 1) // 2, c.ra == (9 * c.na + 9) // 10]
        per_key: dict[str, list[float | None]] = {}
        total: list[float | None] = [None, None]
        with self.db.session() as session:
            for k, w, *hits in session.execute(select(c.k, c.w, *marks).where(or_(*marks))):
                value = max(round(float(w), 3), 0.0)
                slot = per_key.setdefault(k, [None, None])
                for i, hit in enumerate(hits):
                    if hit:
                        (slot if i < 2 else total)[i % 2] = value
        return {k: (v[0], v[1]) for k, v in per_key.items()}, (total[0], total[1])

    def _waits_pg(self, key: Any, source: Any, conds: Any, wait: Any, overall: bool) -> tuple[Waits, Wait]:
        """``_waits`` on PostgreSQL: ``percentile_disc`` (nearest rank), the total by a grouping set."""
        grouping = func.grouping_sets(key, tuple_()) if overall else key
        query = (
            select(
                key.label("k"),
                func.grouping(key).label("g") if overall else literal(0).label("g"),
                func.percentile_disc(0.5).within_group(wait).label("m"),
                func.percentile_disc(0.9).within_group(wait).label("p"),
            )
            .select_from(source)
            .where(*conds)
            .group_by(grouping)
        )
        per_key: Waits = {}
        total: Wait = (None, None)
        with self.db.session() as session:
            for k, g, m, p in session.execute(query):
                # No started record in scope: PostgreSQL still answers the empty grouping set, with NULLs.
                value = (
                    (None, None)
                    if m is None
                    else (max(round(float(m), 3), 0.0), max(round(float(p), 3), 0.0))
                )
                if g:
                    total = value
                else:
                    per_key[k] = value
        return per_key, total

    def utilisation(self, scope: Scope) -> tuple[list[float], list[float]]:
        """The GPU-hours of records with telemetry per utilisation bin: (bin centres in %, GPU-hours)."""
        with self.db.session() as session:
            return _bins(session.execute(utilisation_bins(telemetry_of_attempts(), _where(scope))).all())

    def gpu_hours_over_time(self, scope: Scope) -> dict[str, list[float]]:
        """GPU-hours per project per bucket of ``scope.period.buckets()`` (by start time)."""
        buckets = scope.period.buckets()
        step_s = (buckets[0][1] - buckets[0][0]).total_seconds() if buckets else 86400.0
        offset = self._seconds(REC.c.start_time, literal(scope.period.start, REC.c.start_time.type))
        index = func.floor(offset / step_s)
        key = _project_key()
        query = (
            select(key, index, func.sum(REC.c.gpu_hours))
            .where(*_where(scope), REC.c.gpu_hours > 0)
            .group_by(key, index)
        )
        series: dict[str, list[float]] = {}
        with self.db.session() as session:
            for project, i, hours in session.execute(query):
                values = series.setdefault(project, [0.0] * len(buckets))
                values[min(max(int(i), 0), len(buckets) - 1)] += float(hours or 0.0)
        return series


def _added(groups: Any) -> Sums:
    total = Sums()
    for sums in groups:
        total = total.plus(sums)
    return total


def _bins(rows: Any) -> tuple[list[float], list[float]]:
    """Bin centres (5, 15, ... 95 %) and their GPU-hours; 100 % lands in the last bin."""
    hours = [0.0] * 10
    for bin_no, gpu_hours in rows:
        hours[min(max(int(bin_no), 0), 9)] += float(gpu_hours or 0.0)
    kept = [(i * UTIL_BIN_PCT + UTIL_BIN_PCT / 2, h) for i, h in enumerate(hours) if h > 0]
    return [c for c, _ in kept], [h for _, h in kept]


def _version_order(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (1 << 62, version)
