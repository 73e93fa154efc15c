"""The report page's plots, drawn with matplotlib as SVG (the one server-side module importing it).

Three plots, each from ``core.reports.Charts``: GPU-hours over time per
project (stacked bars, one per day or week), cost by queue (horizontal
bars), and the distribution of GPU utilisation (a histogram weighted by
GPU-hours). Figures are built with ``matplotlib.figure.Figure``, never
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
        ax.legend(loc="upper left", fontsize="small", frameon=False)
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
