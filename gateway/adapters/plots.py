"""The pages' plots, drawn with matplotlib as SVG (the one server-side module importing it).

The report page's three, each from ``core.reports.Charts``: GPU-hours over
time per project (stacked bars, one per day or week), cost by queue
(horizontal bars), and the distribution of GPU utilisation (a histogram
weighted by GPU-hours). A run's metrics, one chart per group of series
(``core.lineage.metric_groups``) with a legend, and the compare page's one
metric of several runs on one chart. An eval comparison's paired difference
per task with its interval. Figures are built with ``matplotlib.figure.Figure``, never
pyplot, so concurrent requests share no global figure state; glyphs are
drawn as paths and math text is off, so no project or queue name can become
markup. Each function returns SVG bytes, or None when there is nothing to plot.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from gateway.core.lineage.metric_groups import Chart
from gateway.core.reports.rows import Charts

if TYPE_CHECKING:  # imported when a plot is drawn: matplotlib costs start-up time
    from matplotlib.figure import Figure

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
MAX_SERIES = 8  # projects drawn on their own; the rest are summed as "others"
MAX_BARS = 20  # queues drawn on their own; the rest are summed as "others"


@contextmanager
def _figure(width_in: float, height_in: float) -> Iterator[Figure]:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"text.parse_math": False, "svg.fonttype": "path", "svg.hashsalt": "gw"}):
        yield Figure(figsize=(width_in, height_in))


def _svg(fig: Figure) -> bytes:
    with warnings.catch_warnings():  # labels too long to fit are drawn cut, not an error
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _label(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _top(values: dict[str, float], limit: int) -> dict[str, float]:
    ranked = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    kept = dict(ranked[:limit])
    rest = sum(v for _, v in ranked[limit:])
    if rest:
        kept["others"] = rest
    return kept


def usage_over_time_svg(charts: Charts) -> bytes | None:
    """Stacked bars of GPU-hours per bucket, one colour per project (the largest ``MAX_SERIES``)."""
    series = charts.gpu_hours_by_project
    if not charts.bucket_starts or not any(any(v) for v in series.values()):
        return None
    totals = _top({p: sum(v) for p, v in series.items()}, MAX_SERIES)
    kept = [p for p in totals if p != "others"]
    lines = {p: series[p] for p in kept}
    if "others" in totals:
        lines["others"] = [
            sum(series[p][i] for p in series if p not in kept) for i in range(len(charts.bucket_starts))
        ]
    with _figure(9, 3.6) as fig:
        ax = fig.add_subplot()
        x = list(range(len(charts.bucket_starts)))
        bottom = [0.0] * len(x)
        for i, (project, values) in enumerate(lines.items()):
            ax.bar(
                x, values, bottom=bottom, color=PALETTE[i % len(PALETTE)], label=_label(project), width=0.85
            )
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        step = max(1, len(x) // 10)
        ax.set_xticks(x[::step], [d[:10] for d in charts.bucket_starts[::step]], rotation=30, ha="right")
        ax.set_ylabel("GPU-hours")
        ax.set_title("GPU-hours over time per project")
        # beside the plot, not on it: inside the axes it covered the bars it names
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        return _svg(fig)


def cost_by_queue_svg(charts: Charts, currency: str) -> bytes | None:
    """Horizontal bars of the period's cost per queue (the largest ``MAX_BARS``), largest on top."""
    costs = {q: c for q, c in charts.cost_by_queue.items() if c > 0}
    if not costs:
        return None
    bars = _top(costs, MAX_BARS)
    with _figure(9, 0.35 * len(bars) + 1.4) as fig:
        ax = fig.add_subplot()
        names = list(bars)
        ax.barh(range(len(names)), [bars[n] for n in names], color=PALETTE[0])
        ax.set_yticks(range(len(names)), [_label(n) for n in names])
        ax.invert_yaxis()
        ax.set_xlabel(f"cost ({_label(currency, 12)})")
        ax.set_title("cost by queue")
        return _svg(fig)


def utilisation_svg(charts: Charts) -> bytes | None:
    """A histogram of records' mean GPU utilisation (0-100 %, bins of 10), weighted by GPU-hours."""
    if not charts.utilisation_pct:
        return None
    with _figure(9, 3.2) as fig:
        ax = fig.add_subplot()
        ax.hist(
            charts.utilisation_pct,
            bins=list(range(0, 101, 10)),
            weights=charts.utilisation_gpu_hours,
            color=PALETTE[2],
            edgecolor="white",
        )
        ax.set_xlim(0, 100)
        ax.set_xlabel("mean GPU utilisation of a record (%)")
        ax.set_ylabel("GPU-hours")
        ax.set_title("distribution of GPU utilisation")
        return _svg(fig)


MAX_LINES = 12  # series drawn on one metrics chart; more are named in the legend's last entry


def metric_chart_svg(chart: Chart, x_label: str = "step") -> bytes | None:
    """One chart of metric series (legend label -> points) against ``x_label``, one line each, with a
    legend beside the plot; None when there is nothing to draw. A one-point series is drawn as a dot."""
    lines = [(label, points) for label, points in chart.series.items() if points]
    if not lines:
        return None
    with _figure(9, 3.4) as fig:
        ax = fig.add_subplot()
        for i, (label, points) in enumerate(lines[:MAX_LINES]):
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            ax.plot(
                xs,
                ys,
                color=PALETTE[i % len(PALETTE)],
                label=_label(label),
                marker="o" if len(xs) < 3 else None,
                linewidth=1.6,
                markersize=4,
            )
        if len(lines) > MAX_LINES:
            ax.plot([], [], " ", label=f"and {len(lines) - MAX_LINES} more not drawn")
        ax.set_xlabel(x_label)
        ax.set_ylabel(_label(chart.y_label, 30))
        ax.set_title(_label(chart.title, 60))
        ax.grid(True, color="#e5e5e5", linewidth=0.6)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        return _svg(fig)


DIFF_COLOURS = {
    "regressed": "#c0392b",
    "inconclusive": "#d68910",
    "worse within margin": "#d68910",
    "better": "#1e8449",
    "no significant change": "#2e86c1",
}


def paired_differences_svg(rows: list[dict[str, object]], a: str, b: str) -> bytes | None:
    """Each task's paired difference (``a`` - ``b``) with its confidence interval, zero and the margin on
    the worse side (dashed); None when no row has a paired test. ``rows`` are an eval comparison's."""
    tested = [
        r
        for r in rows
        if isinstance(r.get("delta"), float | int) and isinstance(r.get("ci_low"), float | int)
    ]
    if not tested:
        return None
    with _figure(9, 0.55 * len(tested) + 1.6) as fig:
        ax = fig.add_subplot()
        for y, r in enumerate(tested):
            delta, low, high = float(r["delta"]), float(r["ci_low"]), float(r["ci_high"])  # type: ignore[arg-type]  # numbers: a paired row has all three
            colour = DIFF_COLOURS.get(str(r.get("verdict")), "#555555")
            ax.errorbar(delta, y, xerr=[[delta - low], [high - delta]], fmt="o", color=colour, capsize=4)
            margin = r.get("margin")
            if isinstance(margin, float | int):
                worse = -float(margin) if r.get("higher_is_better", True) else float(margin)
                ax.plot([worse, worse], [y - 0.3, y + 0.3], color="#c0392b", linestyle="--", linewidth=1)
        ax.axvline(0, color="#333333", linewidth=0.8)
        ax.set_yticks(
            range(len(tested)), [_label(f"{r.get('task')} / {r.get('metric')}", 50) for r in tested]
        )
        ax.invert_yaxis()
        ax.set_xlabel(_label(f"{a} - {b}", 70) + "  (dashed: the margin on the worse side)")
        ax.set_title("paired difference per task, with its confidence interval")
        return _svg(fig)
