"""A report as one self-contained HTML page: a heading, its plots, the table, the notes.

The plots come in as SVG bytes (drawn by ``adapters/plots.py``) and are
embedded as ``data:`` URIs in ``<img>`` elements, so the page needs no other
file, no script and no network. Every value is HTML-escaped; a plot with
nothing to draw is replaced by a sentence saying so.
"""

from __future__ import annotations

import base64
import html

from gateway.core.reports.render import table_cells
from gateway.core.reports.rows import Report

PLOT_TITLES = {
    "usage_over_time": "GPU-hours over time per project",
    "cost_by_queue": "Cost by queue",
    "utilisation": "Distribution of GPU utilisation",
}
NOTHING_TO_PLOT = {
    "usage_over_time": "No GPU-hours in this period: nothing to plot.",
    "cost_by_queue": "Nothing was priced in this period: nothing to plot.",
    "utilisation": "No GPU telemetry for these records: utilisation is not known.",
}
STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.9em}
th,td{padding:.25em .7em;border-bottom:1px solid #ddd;text-align:right}
th:first-child,td:first-child{text-align:left}
tr.total td{font-weight:bold;border-top:2px solid #333}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
.meta{color:#555}.note{color:#8a5a00}
"""


def _figure(name: str, svg: bytes | None) -> str:
    title = html.escape(PLOT_TITLES[name])
    if svg is None:
        return f'<figure id="plot-{name}" class="empty"><p>{html.escape(NOTHING_TO_PLOT[name])}</p></figure>'
    data = base64.b64encode(svg).decode("ascii")
    return f'<figure id="plot-{name}"><img alt="{title}" src="data:image/svg+xml;base64,{data}"></figure>'


def report_page(report: Report, plots: dict[str, bytes | None]) -> str:
    """The whole page as text (UTF-8). ``plots`` maps each key of ``PLOT_TITLES`` to SVG bytes or None."""
    e = html.escape
    headings, lines = table_cells(report)
    head = "".join(f"<th>{e(h)}</th>" for h in headings)
    body = []
    for i, line in enumerate(lines):
        css = ' class="total"' if i == len(lines) - 1 else ""
        body.append(f"<tr{css}>" + "".join(f"<td>{e(c)}</td>" for c in line) + "</tr>")
    period = report.period
    title = f"{report.kind.capitalize()} report by {report.by}, {period.label}"
    share = report.total.values.get("failed_share")
    facts = [
        f"Period {period.label}: {period.start.isoformat()} up to {period.end.isoformat()} (UTC).",
        f"Priced by rate versions: {', '.join(report.rate_versions) or 'none'} (currency {report.currency}).",
    ]
    if share is not None:
        facts.append(f"Spent on attempts that failed: {share * 100:.0f}%.")
    cancelled = report.total.values.get("cancelled_share")
    if cancelled is not None:
        facts.append(f"Spent on attempts that were cancelled (not failures): {cancelled * 100:.0f}%.")
    figures = "".join(_figure(name, plots.get(name)) for name in PLOT_TITLES)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title><style>{STYLE}</style></head>'
        f"<body><h1>{e(title)}</h1>"
        + "".join(f'<p class="meta">{e(f)}</p>' for f in facts)
        + "".join(f'<p class="note">{e(n)}</p>' for n in report.notes)
        + f"<h2>Plots</h2>{figures}"
        + f'<h2>By {e(report.by)}</h2><table id="report"><thead><tr>{head}</tr></thead>'
        + f"<tbody>{''.join(body)}</tbody></table>"
        + "</body></html>\n"
    )
