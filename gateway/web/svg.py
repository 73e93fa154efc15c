"""Server-drawn SVG: an attempt timeline, a line plot of metric series, a used-against-cap bar.

Pure functions from values to SVG text. Every label goes through
``markupsafe.escape``; the results are ``Markup`` so that templates embed
them as they are (they carry no script and no user text unescaped).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from markupsafe import Markup, escape

from gateway.core.runs.values import Attempt
from gateway.core.slurm.states import TERMINAL, RunState

WIDTH = 640
ROW_H = 22
STATE_CLASS = {
    RunState.SUBMITTING: "pending",
    RunState.QUEUED: "pending",
    RunState.HELD: "pending",
    RunState.RUNNING: "running",
    RunState.REQUEUED: "requeued",
    RunState.SUCCEEDED: "succeeded",
}


def _utc(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _segments(attempt: Attempt, now: datetime) -> list[tuple[datetime, datetime, RunState]]:
    """(from, to, state) spans of one attempt, from its state events; the last span ends at its end
    time (or now, while it lives)."""
    # In the order they were recorded: an event's time may come from Slurm (a start time a second
    # before the gateway recorded the job id), so a span starts no earlier than the one before it.
    events = sorted(attempt.events, key=lambda e: e.id)
    starts: list[datetime] = []
    for event in events:
        starts.append(max(_utc(event.at), starts[-1]) if starts else _utc(event.at))
    spans = []
    for i, event in enumerate(events):
        start = starts[i]
        if i + 1 < len(events):
            end = starts[i + 1]
        elif attempt.end_time is not None:
            end = max(_utc(attempt.end_time), start)
        else:
            end = now if event.to_state not in _ENDED else start
        spans.append((start, end, event.to_state))
    return spans


_ENDED = TERMINAL


def timeline(attempts: Sequence[Attempt], *, now: datetime | None = None) -> Markup:
    """One row per attempt, one coloured span per state it was in (pending, running, requeued ...),
    on a shared time axis; a title on each span says state and seconds."""
    now = _utc(now or datetime.now(UTC))
    rows = [(a, _segments(a, now)) for a in attempts]
    spans = [s for _, segs in rows for s in segs]
    if not spans:
        return Markup('<p class="muted">no state changes recorded yet</p>')
    t0 = min(s[0] for s in spans)
    t1 = max(max(s[1] for s in spans), t0)
    total_s = max((t1 - t0).total_seconds(), 1.0)
    left, plot_w = 70, WIDTH - 80
    height = ROW_H * len(rows) + 24
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="timeline of the attempts">'
    ]
    for i, (attempt, segs) in enumerate(rows):
        y = 4 + i * ROW_H
        parts.append(f'<text x="2" y="{y + 14}" class="label">attempt {attempt.number}</text>')
        for start, end, state in segs:
            x = left + plot_w * (start - t0).total_seconds() / total_s
            w = max(plot_w * (end - start).total_seconds() / total_s, 2.0)
            css = STATE_CLASS.get(state, "ended-" + state.value)
            secs = round((end - start).total_seconds())
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW_H - 6}" class="span {escape(css)}">'
                f"<title>{escape(state.value)}: {secs} s from {start:%H:%M:%S} UTC</title></rect>"
            )
    axis_y = height - 6
    parts.append(f'<text x="{left}" y="{axis_y}" class="axis">{t0:%Y-%m-%d %H:%M:%S} UTC</text>')
    parts.append(
        f'<text x="{WIDTH - 4}" y="{axis_y}" class="axis" text-anchor="end">+{round(total_s)} s</text>'
    )
    parts.append("</svg>")
    return Markup("".join(parts))


def line_plot(
    series: dict[str, list[list[float]]],
    *,
    height: int = 200,
    x_label: str = "step",
    y_range: tuple[float, float] | None = None,
    empty: str = "no metric series recorded",
) -> Markup:
    """Each series (``[[x, value], ...]``, x a step or seconds: ``x_label``) as a polyline on its own
    scale (or on ``y_range``, e.g. 0-100 for percentages), one plot per series name, with its first
    and last x and its last value written out."""
    if not series:
        return Markup(f'<p class="muted">{escape(empty)}</p>')
    plots = []
    for name, points in sorted(series.items()):
        pts = [(float(s), float(v)) for s, v in points if v is not None and v == v]  # drop gaps, NaN
        if not pts:
            continue
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
        y0, y1 = y_range or (min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1)
        left, top, w, h = 60, 20, WIDTH - 80, height - 50
        coords = " ".join(
            f"{left + w * (x - x0) / (x1 - x0):.1f},{top + h - h * (y - y0) / (y1 - y0):.1f}" for x, y in pts
        )
        plots.append(
            f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(name)}">'
            f'<text x="{left}" y="14" class="label">{escape(name)}</text>'
            f'<rect x="{left}" y="{top}" width="{w}" height="{h}" class="frame"/>'
            f'<polyline points="{coords}" class="line"/>'
            f'<text x="4" y="{top + 10}" class="axis">{y1:.4g}</text>'
            f'<text x="4" y="{top + h}" class="axis">{y0:.4g}</text>'
            f'<text x="{left}" y="{height - 12}" class="axis">{escape(x_label)} {x0:g}</text>'
            f'<text x="{left + w}" y="{height - 12}" class="axis" text-anchor="end">{escape(x_label)} {x1:g} '
            f"(last {ys[-1]:.4g})</text></svg>"
        )
    return Markup("".join(plots))


def use_bar(label: str, used: float, cap: float | None, unit: str) -> Markup:
    """A horizontal bar of ``used`` against ``cap`` (no cap: the bar is drawn against the use itself)."""
    scale = cap if cap else max(used, 1.0)
    frac = min(used / scale, 1.0) if scale else 0.0
    w = WIDTH - 20
    css = "over" if cap is not None and used >= cap else "ok"
    cap_text = f"of {cap:g} {unit}" if cap is not None else f"{unit}, no cap"
    return Markup(
        f'<svg class="usebar" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="46" '
        f'viewBox="0 0 {WIDTH} 46" role="img" aria-label="{escape(label)}">'
        f'<text x="10" y="14" class="label">{escape(label)}: {used:.4g} {escape(cap_text)}</text>'
        f'<rect x="10" y="20" width="{w}" height="18" class="frame"/>'
        f'<rect x="10" y="20" width="{w * frac:.1f}" height="18" class="fill {css}"/></svg>'
    )
