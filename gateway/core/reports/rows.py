"""Accounting reports: rows of one dimension's values, each with the measures its kind shows.

The store sums priced accounting records per dimension value into ``Sums``
(in SQL); this module turns sums into the measures a person reads (shares,
means, against caps) and assembles a ``Report``. The three kinds differ only
in which measures they show (``COLUMNS``); every report carries the same
total row and the rate versions that priced its records, so a ``--by user``
and a ``--by project`` report over the same period add up to the same total.

Measures with no data say so: a GPU utilisation with no telemetry is None
(shown as "no telemetry"), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gateway.core.reports.periods import Period

Kind = Literal["usage", "cost", "efficiency"]
Dimension = Literal["project", "user", "queue", "run", "release", "cluster"]
KINDS: tuple[Kind, ...] = ("usage", "cost", "efficiency")
DIMENSIONS: tuple[Dimension, ...] = ("project", "user", "queue", "run", "release", "cluster")
NO_TELEMETRY = "no telemetry"
TOTAL_KEY = "(total)"


@dataclass(frozen=True)
class Measure:
    """One column: its key in a row's values, its heading, its unit (for renderers)."""

    key: str
    heading: str
    unit: Literal["h", "money", "s", "share", "pct", "count"]


MEASURES: dict[str, Measure] = {
    m.key: m
    for m in (
        Measure("records", "records", "count"),
        Measure("attempts_failed", "failed records", "count"),
        Measure("gpu_hours", "GPU-hours", "h"),
        Measure("cpu_hours", "CPU-hours", "h"),
        Measure("gpu_hours_cap", "GPU-hours cap", "h"),
        Measure("gpu_hours_of_cap", "of cap", "share"),
        Measure("wait_median_s", "wait median", "s"),
        Measure("wait_p90_s", "wait p90", "s"),
        Measure("cost", "cost", "money"),
        Measure("cost_failed", "cost of failed", "money"),
        Measure("failed_share", "spent on failed", "share"),
        Measure("attempts_cancelled", "cancelled records", "count"),
        Measure("cost_cancelled", "cost of cancelled", "money"),
        Measure("cancelled_share", "spent on cancelled", "share"),
        Measure("gpu_util_pct", "GPU util", "pct"),
        Measure("idle_gpu_hours", "idle GPU-hours", "h"),
        Measure("telemetry_share", "with telemetry", "share"),
    )
}
COLUMNS: dict[Kind, tuple[str, ...]] = {
    "usage": (
        "records",
        "gpu_hours",
        "cpu_hours",
        "gpu_hours_cap",
        "gpu_hours_of_cap",
        "wait_median_s",
        "wait_p90_s",
    ),
    "cost": (
        "records",
        "gpu_hours",
        "cpu_hours",
        "cost",
        "cost_failed",
        "failed_share",
        "cost_cancelled",
        "cancelled_share",
    ),
    "efficiency": (
        "records",
        "gpu_hours",
        "gpu_util_pct",
        "idle_gpu_hours",
        "telemetry_share",
        "attempts_failed",
        "failed_share",
        "attempts_cancelled",
    ),
}


@dataclass(frozen=True)
class Sums:
    """What SQL adds up over the priced records of one group (one dimension value, or all).

    Hours are allocated TRES x elapsed; ``cost`` in the rate table's currency; waits are
    eligible-to-start seconds (nearest-rank median and 90th percentile, None with no started record).
    ``telemetry_gpu_hours`` is the GPU-hours of records that have a GPU telemetry summary, and
    ``util_gpu_hours`` the sum of their mean utilisation (0..100) x their GPU-hours.
    """

    records: int = 0
    failed: int = 0
    gpu_hours: float = 0.0
    cpu_hours: float = 0.0
    cost: float = 0.0
    cost_failed: float = 0.0
    gpu_hours_failed: float = 0.0
    cancelled: int = 0  # records that ended CANCELLED: counted apart from failed ones
    cost_cancelled: float = 0.0
    gpu_hours_cancelled: float = 0.0
    wait_median_s: float | None = None
    wait_p90_s: float | None = None
    telemetry_gpu_hours: float = 0.0
    util_gpu_hours: float = 0.0
    idle_gpu_hours: float = 0.0

    def plus(self, other: Sums) -> Sums:
        """The sums of both groups of records together; waits, which do not add up, are None."""
        return Sums(
            records=self.records + other.records,
            failed=self.failed + other.failed,
            gpu_hours=self.gpu_hours + other.gpu_hours,
            cpu_hours=self.cpu_hours + other.cpu_hours,
            cost=self.cost + other.cost,
            cost_failed=self.cost_failed + other.cost_failed,
            gpu_hours_failed=self.gpu_hours_failed + other.gpu_hours_failed,
            cancelled=self.cancelled + other.cancelled,
            cost_cancelled=self.cost_cancelled + other.cost_cancelled,
            gpu_hours_cancelled=self.gpu_hours_cancelled + other.gpu_hours_cancelled,
            telemetry_gpu_hours=self.telemetry_gpu_hours + other.telemetry_gpu_hours,
            util_gpu_hours=self.util_gpu_hours + other.util_gpu_hours,
            idle_gpu_hours=self.idle_gpu_hours + other.idle_gpu_hours,
        )


@dataclass(frozen=True)
class Row:
    """One line of a report: the dimension's value and every measure (None: nothing to show)."""

    key: str
    values: dict[str, float | int | None]
    note: str = ""  # e.g. "no telemetry", "not a gateway run"


@dataclass(frozen=True)
class Charts:
    """What the HTML page plots, whatever the report is by.

    ``bucket_starts`` cut the period (``Period.buckets``); ``gpu_hours_by_project`` has one value per
    bucket per project; ``cost_by_queue`` the period's cost per queue; ``utilisation_pct`` the mean
    GPU utilisation of each record with telemetry, and ``utilisation_gpu_hours`` its weight.
    """

    bucket_starts: list[str] = field(default_factory=list)
    gpu_hours_by_project: dict[str, list[float]] = field(default_factory=dict)
    cost_by_queue: dict[str, float] = field(default_factory=dict)
    utilisation_pct: list[float] = field(default_factory=list)
    utilisation_gpu_hours: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Report:
    """A report: which kind, by which dimension, over which period; its rows, total and provenance."""

    kind: Kind
    by: Dimension
    period: Period
    columns: tuple[str, ...]
    rows: list[Row]
    total: Row
    rate_versions: list[str]  # every rate version that priced a record counted here
    currency: str
    telemetry: bool  # whether any record counted here has GPU telemetry (efficiency reports look)
    notes: list[str] = field(default_factory=list)
    charts: Charts | None = None


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def measures(
    sums: Sums, *, cap_gpu_hours: float | None = None, telemetry: bool = True
) -> tuple[dict[str, float | int | None], str]:
    """Every measure of ``MEASURES`` from one group's ``sums``, and a note for the row.

    ``failed_share`` is the cost of failed records over the cost (GPU-hours when nothing was
    priced), ``cancelled_share`` the same of cancelled ones (a cancellation is no failure);
    ``gpu_util_pct`` is the GPU-hour-weighted mean utilisation of the records with telemetry,
    None (note "no telemetry") when none has any; ``gpu_hours_of_cap`` is None without a cap.
    ``telemetry`` False: the sums were made without looking at telemetry (usage and cost reports),
    so its measures are None and no row says "no telemetry".
    """
    looked = telemetry
    telemetry = looked and sums.telemetry_gpu_hours > 0
    failed_share = (
        _share(sums.cost_failed, sums.cost)
        if sums.cost > 0
        else _share(sums.gpu_hours_failed, sums.gpu_hours)
    )
    cancelled_share = (
        _share(sums.cost_cancelled, sums.cost)
        if sums.cost > 0
        else _share(sums.gpu_hours_cancelled, sums.gpu_hours)
    )
    values: dict[str, float | int | None] = {
        "records": sums.records,
        "attempts_failed": sums.failed,
        "gpu_hours": sums.gpu_hours,
        "cpu_hours": sums.cpu_hours,
        "gpu_hours_cap": cap_gpu_hours,
        "gpu_hours_of_cap": _share(sums.gpu_hours, cap_gpu_hours) if cap_gpu_hours else None,
        "wait_median_s": sums.wait_median_s,
        "wait_p90_s": sums.wait_p90_s,
        "cost": sums.cost,
        "cost_failed": sums.cost_failed,
        "failed_share": failed_share,
        "attempts_cancelled": sums.cancelled,
        "cost_cancelled": sums.cost_cancelled,
        "cancelled_share": cancelled_share,
        "gpu_util_pct": sums.util_gpu_hours / sums.telemetry_gpu_hours if telemetry else None,
        "idle_gpu_hours": sums.idle_gpu_hours if telemetry else None,
        "telemetry_share": _share(sums.telemetry_gpu_hours, sums.gpu_hours) if looked else None,
    }
    note = "" if telemetry or not looked or sums.gpu_hours == 0 else NO_TELEMETRY
    return values, note


def build_report(
    kind: Kind,
    by: Dimension,
    period: Period,
    groups: dict[str, Sums],
    total: Sums,
    *,
    rate_versions: list[str],
    currency: str,
    caps_gpu_hours: dict[str, float] | None = None,
    total_cap_gpu_hours: float | None = None,
    notes: list[str] | None = None,
    charts: Charts | None = None,
) -> Report:
    """The report of ``kind`` by ``by``: one row per group (largest GPU-hours, then cost, first; ties by
    key), the total row, and the notes a reader needs (rate versions, records with no telemetry).

    ``caps_gpu_hours`` maps a group's key to its monthly GPU-hours cap, pro-rated by the caller to the
    period. ``total`` is summed by the store over the same records, not from the rows, so the
    reconciliation check (``unreconciled``) compares two independent sums.
    """
    caps = caps_gpu_hours or {}
    looked = kind == "efficiency"
    rows = []
    for key, sums in groups.items():
        values, note = measures(sums, cap_gpu_hours=caps.get(key), telemetry=looked)
        rows.append(Row(key, values, note))
    rows.sort(key=lambda r: (-(r.values["gpu_hours"] or 0), -(r.values["cost"] or 0), r.key))
    total_values, total_note = measures(total, cap_gpu_hours=total_cap_gpu_hours, telemetry=looked)
    said = list(notes or [])
    if not rate_versions and total.records:
        said.append("no record in this period was priced: no rate was valid at their start")
    if looked and total.gpu_hours > 0 and total.telemetry_gpu_hours == 0:
        said.append("no GPU telemetry for these records: utilisation and idle GPU-hours are not known")
    return Report(
        kind=kind,
        by=by,
        period=period,
        columns=COLUMNS[kind],
        rows=rows,
        total=Row(TOTAL_KEY, total_values, total_note),
        rate_versions=sorted(rate_versions),
        currency=currency,
        telemetry=total.telemetry_gpu_hours > 0,
        notes=said,
        charts=charts,
    )


ADDITIVE = (
    "records",
    "attempts_failed",
    "attempts_cancelled",
    "gpu_hours",
    "cpu_hours",
    "cost",
    "cost_failed",
    "cost_cancelled",
)


def unreconciled(report: Report, *, rel_tol: float = 1e-9) -> list[str]:
    """Which additive measures' row sums differ from the total (empty when they reconcile).

    Only meaningful for dimensions that partition the records (project, user, queue, run, cluster); a release
    report may count one record under several releases that share a run.
    """
    problems = []
    for key in ADDITIVE:
        rows_sum = sum(float(r.values[key] or 0) for r in report.rows)
        total = float(report.total.values[key] or 0)
        if abs(rows_sum - total) > rel_tol * max(abs(total), 1.0):
            problems.append(f"{key}: rows add up to {rows_sum}, the total is {total}")
    return problems
