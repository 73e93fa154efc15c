"""The metric charts the pages draw: a run's series grouped into charts, one metric of several runs on
one chart (the compare page), and an eval comparison's per-task paired differences.

Grouping is ``core.lineage.metric_groups``; drawing is ``adapters.plots`` (matplotlib, SVG). Reading
the series goes through ``LineageService.outputs``, so a run the caller may not read is NotFound here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.adapters import plots
from gateway.core.access.values import Principal
from gateway.core.lineage.metric_groups import Points, charts, compare_series, metric_names
from gateway.core.runs.tasks import SweepTask
from gateway.errors import SpecError, SpecIssue
from gateway.services.lineage.walk import LineageService

MAX_COMPARED = 12  # runs on one compare chart


@dataclass(frozen=True)
class Figure:
    """One drawn chart: its title, the series it holds (legend labels), and the SVG."""

    title: str
    labels: tuple[str, ...]
    svg: bytes


def run_figures(series: dict[str, Any]) -> list[Figure]:
    """A run's series (``outputs()["series"]``) as charts: losses together, the learning rate apart, the
    step counters left out; one figure per group, each with a legend."""
    out = []
    for chart in charts(series):
        svg = plots.metric_chart_svg(chart)
        if svg is not None:
            out.append(Figure(chart.title, tuple(chart.series), svg))
    return out


@dataclass(frozen=True)
class Compared:
    """The compare page: the runs (id, name), the metrics any of them has, the one shown and its chart."""

    runs: list[dict[str, Any]]
    metrics: list[str]
    metric: str | None
    figure: Figure | None
    missing: list[str]  # runs without the metric


def compare(
    lineage: LineageService, run_ids: list[str], metric: str | None, *, principal: Principal
) -> Compared:
    """``metric`` of each run on one chart (the first metric they share when none is named). SpecError
    for no run, too many, or a metric none of them has; NotFound for a run the caller may not read."""
    ids = list(dict.fromkeys(r for r in run_ids if r))
    if not ids:
        raise SpecError(
            [SpecIssue("run", "name at least one run to compare (run=r-...)", None)], what="compare"
        )
    if len(ids) > MAX_COMPARED:
        raise SpecError(
            [SpecIssue("run", f"at most {MAX_COMPARED} runs on one chart", len(ids))], what="compare"
        )
    runs, by_label = [], {}
    for run_id in ids:
        outputs = lineage.outputs(run_id, principal=principal)  # NotFound unless the caller may read it
        run = lineage.runs.get_run(run_id)
        label = f"{run.name or run_id} ({run_id})"
        runs.append({"id": run_id, "name": run.name, "state": run.state.value, "label": label})
        by_label[label] = outputs["series"]
    names = metric_names(by_label)
    if metric is not None and metric not in names:
        valid = ", ".join(names) or "none (the runs recorded no metric series)"
        raise SpecError(
            [SpecIssue("metric", f"none of these runs has it; they have: {valid}", metric)], what="compare"
        )
    chosen = metric or _shared_first(by_label, names)
    if chosen is None:
        return Compared(runs, names, None, None, [])
    chart = compare_series(by_label, chosen)
    svg = plots.metric_chart_svg(chart)
    figure = Figure(chosen, tuple(chart.series), svg) if svg is not None else None
    missing = [r["id"] for r in runs if r["label"] not in chart.series]
    return Compared(runs, names, chosen, figure, missing)


def task_label(task: SweepTask) -> str:
    """A sweep task as a chart's legend and a table name it: its index and sweep point."""
    point = ", ".join(f"{k}={v}" for k, v in task.point.items())
    return f"task {task.index}" + (f" ({point})" if point else "")


def sweep_figure(tasks: list[SweepTask], metric: str) -> Figure | None:
    """``metric`` of every task of a sweep on one chart, one line per task in the order given (best
    first: the first ``MAX_LINES`` are drawn); None when no task has a series of it."""
    by_label: dict[str, dict[str, Points]] = {
        # a point without a step is placed at its position in the series
        task_label(t): {
            name: [(float(i if step is None else step), value) for i, (step, value) in enumerate(points)]
            for name, points in t.series.items()
        }
        for t in tasks
    }
    chart = compare_series(by_label, metric)
    svg = plots.metric_chart_svg(chart, x_label="step")
    return Figure(metric, tuple(chart.series), svg) if svg is not None else None


def _shared_first(by_label: dict[str, dict[str, Any]], names: list[str]) -> str | None:
    """The metric most runs have (a loss first on a tie), or None when there is none."""
    if not names:
        return None
    counts = {n: sum(1 for s in by_label.values() if n in s) for n in names}
    return sorted(names, key=lambda n: (-counts[n], "loss" not in n, n))[0]


def eval_difference_svg(comparison: dict[str, Any]) -> bytes | None:
    """An eval comparison's (``GateService.compare``) per-task paired differences with their intervals."""
    return plots.paired_differences_svg(
        list(comparison.get("rows") or []), str(comparison.get("a")), str(comparison.get("b"))
    )
