"""``gw eval compare --html FILE``: one self-contained HTML page of a comparison, with its plot.

The page holds the verdict with its reasons, a plot of each task's paired
difference (a - b) with its confidence interval, the margin and zero, and
the full per-task table. The plot is drawn with matplotlib (the one module
that imports it) as SVG, glyphs drawn as paths, embedded as a data URI; every
value from the server is HTML-escaped, and matplotlib's math text is off, so
no name or reason can become markup or script.
"""

from __future__ import annotations

import base64
import html
import io
import warnings
from typing import Any

ROW_COLOURS = {
    "regressed": "#c0392b",
    "inconclusive": "#d68910",
    "worse within margin": "#d68910",
    "better": "#1e8449",
    "no significant change": "#2e86c1",
}


def plot_svg(cmp: dict[str, Any]) -> bytes | None:
    """The per-task differences with their intervals as SVG; None when no row has a paired test."""
    rows = [r for r in cmp["rows"] if r["ci_low"] is not None and r["delta"] is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    with matplotlib.rc_context({"text.parse_math": False, "svg.fonttype": "path"}):
        fig, ax = plt.subplots(figsize=(8, 0.6 * len(rows) + 1.6))
        for y, r in enumerate(rows):
            colour = ROW_COLOURS.get(r["verdict"], "#555555")
            low, high = r["delta"] - r["ci_low"], r["ci_high"] - r["delta"]
            ax.errorbar(r["delta"], y, xerr=[[low], [high]], fmt="o", color=colour, capsize=4)
            if r.get("margin") is not None:
                worse = -r["margin"] if r["higher_is_better"] else r["margin"]
                ax.plot([worse, worse], [y - 0.3, y + 0.3], color="#c0392b", linestyle="--", linewidth=1)
        ax.axvline(0, color="#333333", linewidth=0.8)
        ax.set_yticks(range(len(rows)), [_label(f"{r['task']} / {r['metric']}") for r in rows])
        ax.invert_yaxis()
        ax.set_xlabel(f"{cmp['a']} - {cmp['b']}  (dashed: the margin on the worse side)")
        ax.set_title("paired difference per task, with its confidence interval")
        with warnings.catch_warnings():  # labels too long to fit: drawn cut, not an error
            warnings.simplefilter("ignore", UserWarning)
            fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg")
        plt.close(fig)
    return buffer.getvalue()


def _label(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cell(value: Any, fmt: str = ".4g") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return html.escape(format(value, fmt))
    return html.escape(str(value))


def compare_page(cmp: dict[str, Any]) -> str:
    """The whole page, as text (UTF-8)."""
    e = html.escape
    svg = plot_svg(cmp)
    figure = (
        f'<img alt="paired differences" src="data:image/svg+xml;base64,{base64.b64encode(svg).decode()}">'
        if svg is not None
        else "<p>No paired test: nothing to plot.</p>"
    )
    reasons = "".join(f"<li>{e(r)}</li>" for r in cmp["reasons"]) or "<li>none</li>"
    notes = "".join(f"<li>{e(n)}</li>" for n in cmp["notes"])
    head = [
        "task",
        "metric",
        "a",
        "b",
        "a - b",
        "CI low",
        "CI high",
        "p",
        "p adjusted",
        "MDE",
        "n",
        "verdict",
    ]
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{_cell(v)}</td>"
            for v in (
                r["task"],
                r["metric"],
                r["a"],
                r["b"],
                r["delta"],
                r["ci_low"],
                r["ci_high"],
                r["p_value"],
                r["p_adjusted"],
                r["mde"],
                r["n"],
                r["verdict"],
            )
        )
        + "</tr>"
        for r in cmp["rows"]
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{e(cmp["a"])} against {e(cmp["b"])}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }}
td:first-child, td:nth-child(2), td:last-child {{ text-align: left; }}
</style></head><body>
<h1>{e(cmp["a"])} against {e(cmp["b"])}</h1>
<p>suite version {e(cmp["suite_version"])} (a: {e(cmp["a_suite_version"])}, b: {e(cmp["b_suite_version"])});
gate of a against b: <strong>{e(cmp["verdict"])}</strong> (not recorded)</p>
<h2>Why</h2><ul>{reasons}</ul>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
<h2>Per task</h2>
{figure}
<table><tr>{"".join(f"<th>{e(h)}</th>" for h in head)}</tr>
{body}
</table>
</body></html>
"""
