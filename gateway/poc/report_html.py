"""``summary.html``: the POC written as the report a platform chooser reads.

A one-page overview table at the top (scenario, verdict, time, cost,
evidence link), then per scenario: what was done, what the platform showed
(its explanations in its own words), the key records (each id a link to its
section in the scenario's evidence report), the costs, and every check with
what it expected and what it saw. Self-contained: inline CSS, no script, no
link off the page but the bundles and JSON beside it. A print stylesheet
fits the overview on the first page of A4 or Letter; ``summary.pdf`` is this
page printed by Chromium (``report.print_pdf``).
"""

from __future__ import annotations

import html
from typing import Any

from gateway.poc.words import duration, money

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ccc;margin-top:1.8em}
h3{font-size:1.02em;margin:1em 0 .3em}.muted{color:#666}
table{border-collapse:collapse;width:100%;margin:.4em 0 1em}
td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top;text-align:left;overflow-wrap:break-word}
th{background:#f4f4f4}td code{overflow-wrap:anywhere;word-break:break-all}
code{font:12.5px ui-monospace,monospace}
.ok{color:#070}.no{color:#b00}.badge{font-weight:700;white-space:nowrap}
table.overview td:nth-child(n+3){white-space:nowrap}
dl.shown dt{font-weight:600;margin-top:.5em}dl.shown dd{margin:.1em 0 0 1.2em}
ul.ids{columns:2;padding-left:1.2em}
table.checks td:first-child{width:3.5em}table.checks{font-size:13px}table.checks td{overflow-wrap:anywhere}
@media print{
 @page{margin:12mm}
 body{max-width:none;margin:0;padding:0;font-size:10pt}
 a{color:inherit}
 section.scenario{break-before:page}
 h2,h3{break-after:avoid}tr{break-inside:avoid}thead{display:table-header-group}
 table{font-size:8.5pt}td,th{overflow-wrap:anywhere}
}
"""


def render(data: dict[str, Any]) -> str:
    """The summary page of a POC run's summary data (``report.summary``)."""
    e = html.escape
    passed = data["passed"]
    verdict = "PASS" if passed else "FAIL"
    scenarios = data["scenarios"]
    total_cost = [s.get("cost_total") for s in scenarios if isinstance(s.get("cost_total"), int | float)]
    currency = _currency(scenarios)
    parts = [
        "<!doctype html><html lang=en><head><meta charset='utf-8'>",
        "<meta name=viewport content='width=device-width,initial-scale=1'>",
        f"<title>gw poc: {verdict}</title><style>{CSS}</style></head><body>",
        f"<h1>Platform evaluation: <span class='{'ok' if passed else 'no'}'>{verdict}</span></h1>",
        f"<p class=muted>{sum(1 for s in scenarios if s['passed'])} of {len(scenarios)} scenarios passed "
        f"against the gateway at <code>{e(str(data['gateway']))}</code> in project "
        f"<code>{e(str(data['project']))}</code> (made for this run and removed after it), in "
        f"{e(duration(data['seconds']))}; the runs it priced cost "
        f"{e(money(sum(total_cost), currency) if total_cost else 'nothing priced')}. Every record named "
        "here links to its evidence bundle (the gateway's own, redacted); "
        "<a href='summary.json'>summary.json</a> holds the same in machine-readable form"
        + (
            f"; <a href='{e(data['pdf']['file'])}'>{e(data['pdf']['file'])}</a> is this page printed"
            if (data.get("pdf") or {}).get("file")
            else ""
        )
        + ".</p>",
        "<h2 id=overview>Overview</h2>",
        _overview(scenarios),
    ]
    parts += [_scenario(sc) for sc in scenarios]
    if data.get("accounting"):
        parts.append(_accounting(data["accounting"]))
    if data.get("failed_cost_steps"):
        parts.append(
            "<h2 id=failed-cost>Cost steps that failed</h2><ul>"
            + "".join(
                f"<li>scenario {c['scenario']}: {e(c['step'])}: {e(str(c['seen']))}</li>"
                for c in data["failed_cost_steps"]
            )
            + "</ul>"
        )
    parts.append(
        "<h2 id=cleanup>Clean-up</h2><ul>"
        + "".join(f"<li>{e(line)}</li>" for line in data["cleanup"])
        + "</ul>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def _currency(scenarios: list[dict[str, Any]]) -> str:
    return next((c["currency"] for s in scenarios for c in s.get("costs", []) if c.get("currency")), "")


def _mark(ok: bool, yes: str = "pass", no: str = "FAIL") -> str:
    return f"<span class='badge {'ok' if ok else 'no'}'>{yes if ok else no}</span>"


def _overview(scenarios: list[dict[str, Any]]) -> str:
    e = html.escape
    rows = []
    for sc in scenarios:
        checks = sc["checks"]
        passed = sum(1 for c in checks if c["ok"])
        cost = money(sc.get("cost_total"), _currency([sc])) if sc.get("costs") else "-"
        evidence = f"<a href='{e(sc['evidence'])}'>bundle</a>" if sc.get("evidence") else "-"
        on = ", ".join(sorted({c for c in (sc.get("clusters") or {}).values() if c})) or "-"
        rows.append(
            f"<tr><td><a href='#s{sc['number']}'>{sc['number']}. {e(sc['title'])}</a></td>"
            f"<td>{_mark(sc['passed'])}</td><td>{passed} of {len(checks)}</td><td>{e(on)}</td>"
            f"<td>{e(duration(sc['seconds']))}</td><td>{e(cost)}</td><td>{evidence}</td></tr>"
        )
    head = (
        "<tr><th>scenario</th><th>verdict</th><th>checks</th><th>runs on</th><th>time</th><th>cost</th>"
        "<th>evidence</th></tr>"
    )
    return f"<table class=overview><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def _scenario(sc: dict[str, Any]) -> str:
    e = html.escape
    links = sc.get("links") or {}
    parts = [
        f"<section class=scenario><h2 id='s{sc['number']}'>{sc['number']}. {e(sc['title'])}: "
        f"{_mark(sc['passed'])}</h2>",
        f"<p class=muted>{e(duration(sc['seconds']))}"
        + (
            f"; evidence: <a href='{e(sc['evidence'])}'>report</a> "
            f"(<a href='{e(_zip(sc['evidence']))}'>zip</a>)"
            if sc.get("evidence")
            else "; no evidence bundle"
        )
        + "</p>",
    ]
    if sc.get("error"):
        parts.append(f"<p class=no><b>Stopped</b>: {e(sc['error'])}</p>")
    if sc.get("done"):
        parts.append(
            "<h3>What was done</h3><ol>"
            + "".join(f"<li>{_linked(d, links)}</li>" for d in sc["done"])
            + "</ol>"
        )
    if sc.get("shown"):
        parts.append(
            "<h3>What the platform showed</h3><dl class=shown>"
            + "".join(
                f"<dt>{_linked(s['what'], links)}</dt><dd>{_linked(s['words'], links)}</dd>"
                for s in sc["shown"]
            )
            + "</dl>"
        )
    ids = "".join(
        f"<li>{e(kind.replace('_', ' '))}: {', '.join(_id(v, links) for v in values)}</li>"
        for kind, values in sc["ids"].items()
    )
    parts.append(f"<h3>Key records</h3><ul class=ids>{ids}</ul>")
    if sc.get("costs"):
        on = sc.get("clusters") or {}
        rows = "".join(
            f"<tr><td>{_id(c['run_id'], links)}</td><td>{e(on.get(c['run_id']) or '-')}</td>"
            f"<td>{e(c['step'])}</td>"
            f"<td>{e(money(c.get('total'), c.get('currency')))}</td>"
            f"<td>{e(money(c.get('failed_total'), c.get('currency')))}</td></tr>"
            for c in sc["costs"]
        )
        parts.append(
            "<h3>Cost</h3><table><thead><tr><th>run</th><th>cluster</th><th>step</th><th>total</th>"
            "<th>of it failed attempts"
            f"</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    rows = "".join(_row(c) for c in sc["checks"])
    parts.append(
        "<h3>Checks</h3><table class=checks><thead><tr><th></th><th>step</th><th>expected</th><th>seen</th>"
        f"</tr></thead><tbody>{rows}</tbody></table></section>"
    )
    return "".join(parts)


def _accounting(accounting: dict[str, Any]) -> str:
    """The accounting per cluster: the gateway's usage report beside ``sacct -M``'s hand sum, and the
    checks."""
    e = html.escape

    def cells(values: dict[str, Any] | None) -> str:
        if not values:
            return "<td>-</td><td>-</td><td>-</td>"
        return (
            f"<td>{values['records']}</td><td>{float(values['cpu_hours'] or 0):.4f}</td>"
            f"<td>{float(values['gpu_hours'] or 0):.4f}</td>"
        )

    rows = "".join(
        f"<tr><td>{e(c['cluster'])}</td>{cells(c['gateway'])}{cells(c['sacct'])}"
        f"<td>{e(c.get('why') or '')}</td></tr>"
        for c in accounting["clusters"]
    )
    head = (
        "<tr><th rowspan=2>cluster</th><th colspan=3>the gateway's report</th>"
        "<th colspan=3>sacct -M, summed by hand</th><th rowspan=2>note</th></tr>"
        + "<tr>"
        + "<th>records</th><th>CPU-h</th><th>GPU-h</th>" * 2
        + "</tr>"
    )
    checks = "".join(_row(c) for c in accounting["checks"])
    return (
        "<section class=scenario><h2 id=accounting>Accounting per cluster</h2>"
        f"<p class=muted>The usage report by cluster of account <code>{e(accounting['account'])}</code> "
        f"over {e(accounting['period'])} (UTC; records that started then), beside Slurm's own "
        f"<code>sacct -M</code> of that account.</p><table><thead>{head}</thead><tbody>{rows}</tbody></table>"
        "<table class=checks><thead><tr><th></th><th>step</th><th>expected</th><th>seen</th></tr></thead>"
        f"<tbody>{checks}</tbody></table></section>"
    )


def _zip(evidence: str) -> str:
    return evidence.rsplit("/bundle/", 1)[0] + "/evidence.zip"


def _id(value: str, links: dict[str, str]) -> str:
    """An id, linked to its section of the evidence report when the bundle holds it."""
    e = html.escape
    target = links.get(value)
    shown = f"<code>{e(value)}</code>"
    return f"<a href='{e(target)}'>{shown}</a>" if target else shown


def _linked(text: str, links: dict[str, str]) -> str:
    """``text`` escaped, each id it names linked to its evidence (longest ids first)."""
    out = html.escape(text)
    # ids are replaced by placeholders first, so an id inside another id's link is not linked twice
    marks: dict[str, str] = {}
    for i, value in enumerate(sorted(links, key=len, reverse=True)):
        escaped = html.escape(value)
        if len(value) >= 8 and escaped in out:
            mark = f"\x00{i}\x00"
            marks[mark] = f"<a href='{html.escape(links[value])}'>{escaped}</a>"
            out = out.replace(escaped, mark)
    for mark, link in marks.items():
        out = out.replace(mark, link)
    return out


def _row(check: dict[str, Any]) -> str:
    """One check as a table row: ok or FAIL, the step (cost steps marked), expected, seen."""
    e = html.escape
    step = e(check["step"]) + (" <span class=muted>(cost)</span>" if check["kind"] == "cost" else "")
    return (
        f"<tr><td>{_mark(check['ok'], 'ok')}</td><td>{step}</td>"
        f"<td>{e(check['expected'])}</td><td>{e(check['seen'])}</td></tr>"
    )
