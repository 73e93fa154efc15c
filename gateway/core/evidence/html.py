"""``index.html`` of an evidence bundle: ``evidence.json``'s facts written as a report a reviewer follows.

At the top, the chain in one picture: dataset versions -> runs -> artifacts ->
eval results -> gate decisions -> approvals -> alias moves, each box with its
key facts and a link to its record below. Then one section per object with
what a reviewer checks there (``html_sections``): for a gate the suite
version, thresholds, per-task numbers with intervals, the statistics, the
verdict and who decided; for an alias move the policy in force, the approvals
that counted, override or not. Then the audit trail.

Self-contained: inline CSS, no script, no image, no link off the page (only
anchors within it, each to an element the page holds), so it opens the same
anywhere, offline. A print stylesheet lays it out on A4 or Letter with no
table cut at the side. Every value is HTML-escaped; ``evidence.json`` is the
machine-readable twin and is not changed by this page.
"""

from __future__ import annotations

from html import escape
from typing import Any

from gateway.core.evidence.html_parts import Page, badge, short, when
from gateway.core.evidence.html_sections import sections

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{border-bottom:2px solid #ccc;margin-top:2em;padding-bottom:.1em}
h3{margin:1.4em 0 .3em}h4{margin:.8em 0 .2em;font-size:1em}
.sub{color:#555;margin-top:0}.muted{color:#666}
table{border-collapse:collapse;margin:.4em 0 .8em;width:100%}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}
td code{overflow-wrap:anywhere;word-break:break-all}.badge{white-space:nowrap}
th{background:#f4f4f4;font-weight:600}table.facts th{width:13em}
code,pre,.mono{font:12px ui-monospace,monospace}
pre{background:#f8f8f8;padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere;max-height:40em;overflow-y:auto}
.pass{color:#070}.fail{color:#b00}.warn{color:#a60}
.badge{display:inline-block;border-radius:3px;padding:0 .4em;font-weight:600;border:1px solid currentColor}
.check{background:#f3f7fb;border-left:4px solid #6a9fd4;padding:.3em .7em;margin:.4em 0}
.check b{display:block}
section.obj{border:1px solid #ddd;border-radius:5px;padding:.2em .9em .5em;margin:.8em 0}
section.obj:target{border-color:#6a9fd4;box-shadow:0 0 0 2px #cfe0f1}
.chain{display:grid;grid-template-columns:repeat(auto-fit,minmax(135px,1fr));gap:.5em;margin:.8em 0}
.box{border:1px solid #888;border-radius:5px;padding:.35em .5em;background:#fafafa;font-size:12.5px;
position:relative}
.box>b{display:block;font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:#555}
.box ul{list-style:none;margin:0;padding:0}.box li{margin:.25em 0;overflow-wrap:anywhere}
.box.none{border-style:dashed;color:#777}
.box:not(:last-child)::after{content:"\\2192";position:absolute;right:-.62em;top:.2em;color:#666;font-weight:700}
.step{color:#888;font-size:11px}
nav.toc{columns:2;font-size:13px}nav.toc a{display:block}
@media print{
 @page{margin:12mm}
 body{max-width:none;margin:0;padding:0;font-size:10.5pt}
 a{color:inherit;text-decoration:none}
 h2{break-after:avoid}h3,h4{break-after:avoid}
 section.obj{break-inside:avoid-page}
 tr,.box,.check{break-inside:avoid}thead{display:table-header-group}
 table{font-size:8.5pt}td,th{padding:2px 4px;overflow-wrap:anywhere}
 pre{max-height:none;overflow:visible}
 .chain{grid-template-columns:repeat(4,1fr)}
 nav.toc{display:none}
}
"""

CHAIN_STEPS = (
    "dataset versions",
    "runs",
    "artifacts",
    "eval results",
    "gate decisions",
    "approvals",
    "alias moves",
)


def render_index(doc: dict[str, Any]) -> str:
    """The report of an evidence document (``evidence.json``'s content), as one HTML string."""
    page = Page.of(doc)
    subject = doc.get("subject") or {}
    label = str(subject.get("label"))
    head = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<meta name=viewport content='width=device-width,initial-scale=1'>",
        f"<title>Evidence: {escape(label)}</title><style>{CSS}</style></head><body>",
        f"<h1>Evidence: {escape(str(subject.get('type')))} {escape(label)}</h1>",
        f"<p class=sub>{escape(_verdict_line(doc))}</p>",
        "<p class=muted>Made "
        f"{when(doc.get('generated_at'))} by {escape(str(doc.get('generated_by')))} with gateway "
        f"{escape(str(doc.get('gateway_version')))}; format {escape(str(doc.get('schema')))} "
        f"version {escape(str(doc.get('schema_version')))}. The machine-readable record is "
        "<code>evidence.json</code> beside this page; <code>manifest.json</code> holds both files' "
        "sha256 (<code>gw evidence verify</code>).</p>",
    ]
    redaction = doc.get("redaction")
    if redaction:
        replaced = ", ".join(f"{n} {escape(str(k))}" for k, n in (redaction.get("replaced") or {}).items())
        head.append(
            f"<p class=warn><b>Redacted for sharing</b>: people, hosts, path prefixes, environment values "
            f"and tokens are replaced by stable pseudonyms such as &lt;user-1&gt; ({replaced or 'nothing'} "
            "replaced).</p>"
        )
    body = sections(doc, page)
    parts = [
        *head,
        "<h2 id=chain>The chain</h2>",
        "<p class=muted>From the data to the release, left to right; each box links to its record below.</p>",
        chain(doc, page),
        _toc(body),
        *(html for _, _, html in body),
        "</body></html>\n",
    ]
    return "".join(parts)


def _verdict_line(doc: dict[str, Any]) -> str:
    """One sentence: what the subject is and where its chain ends."""
    ev = doc.get("evaluations") or {}
    gates = ev.get("gates") or []
    moves = doc.get("alias_events") or []
    bits = [f"{len(doc.get('runs') or [])} run(s)", f"{len(doc.get('artifacts') or [])} artifact(s)"]
    bits.append(f"{len(ev.get('eval_runs') or [])} evaluation(s)")
    if gates:
        verdicts = sorted({str(g.get("verdict")) for g in gates})
        bits.append(f"{len(gates)} gate decision(s) ({', '.join(verdicts)})")
    if moves:
        overrides = sum(1 for m in moves if m.get("override"))
        bits.append(f"{len(moves)} alias move(s)" + (f", {overrides} by override" if overrides else ""))
    return "; ".join(bits) + "."


def _toc(body: list[tuple[str, str, str]]) -> str:
    links = "".join(f"<a href='#{escape(anchor)}'>{escape(title)}</a>" for anchor, title, _ in body)
    return f"<nav class=toc aria-label=contents>{links}</nav>"


def chain(doc: dict[str, Any], page: Page) -> str:
    """The chain as a row of boxes (wrapping on narrow screens and paper), one per step, each item a
    link to its section with its key facts."""
    ev = doc.get("evaluations") or {}
    boxes: dict[str, list[str]] = {step: [] for step in CHAIN_STEPS}
    for dv in page.dataset_versions.values():
        boxes["dataset versions"].append(
            page.link(
                dv["id"],
                f"{dv.get('dataset')}@{dv.get('version')}",
                f"digest {short(dv.get('digest'))}, {dv.get('file_count')} file(s)",
            )
        )
    for run in doc.get("runs") or []:
        boxes["runs"].append(
            page.link(
                run["id"],
                str(run.get("name") or run["id"]),
                f"{run['id']}, {run.get('state')}, queue {run.get('queue')}",
            )
        )
    for art in page.chain_artifacts():
        boxes["artifacts"].append(
            page.link(page.artifact_anchor(art), str(art.get("path")), f"sha256 {short(art.get('sha256'))}")
        )
    extra = len(doc.get("artifacts") or []) - len(page.chain_artifacts())
    if extra > 0:
        boxes["artifacts"].append(page.link("artifacts", f"and {extra} more", "other files of the run(s)"))
    for run in ev.get("eval_runs") or []:
        result = run.get("result")
        if result:
            scores = ", ".join(
                f"{t.get('name')} {m}={v.get('value'):.4g}"
                for t in (result.get("tasks") or [])
                for m, v in (t.get("metrics") or {}).items()
                if isinstance(v.get("value"), int | float)
            )
            boxes["eval results"].append(
                page.link(result["id"], str(result.get("suite_version")), scores or "no metric values")
            )
    for gate in ev.get("gates") or []:
        made_for = gate.get("made_for") or {}
        purpose = f"for {made_for.get('alias')} of {made_for.get('release')}" if made_for else "asked for"
        boxes["gate decisions"].append(page.link(gate["id"], None, purpose, lead=badge(gate.get("verdict"))))
    for review in ev.get("reviews") or []:
        boxes["approvals"].append(
            page.link(review["id"], f"review: {review.get('verdict')}", f"by {review.get('reviewer')}")
        )
    for req in doc.get("promotion_requests") or []:
        approvers = ", ".join(str(a) for a in req.get("approvers") or []) or "no one yet"
        boxes["approvals"].append(
            page.link(
                req["id"], f"request: {req.get('alias')} v{req.get('version')}", f"approved by {approvers}"
            )
        )
    for move in doc.get("alias_events") or []:
        facts = f"by {move.get('actor')}, " + (
            "OVERRIDE" if move.get("override") else f"{len(move.get('approvals') or [])} approval(s)"
        )
        boxes["alias moves"].append(
            page.link(move["id"], f"{move.get('alias')} \u2192 v{move.get('to_version')}", facts)
        )
    parts = []
    for i, step in enumerate(CHAIN_STEPS, 1):
        items = boxes[step]
        css = "box" if items else "box none"
        shown = "<ul>" + "".join(f"<li>{x}</li>" for x in items) + "</ul>" if items else "<i>none</i>"
        parts.append(f"<div class='{css}'><b><span class=step>{i}</span> {escape(step)}</b>{shown}</div>")
    return "<div class=chain role=list aria-label='the chain of records'>" + "".join(parts) + "</div>"
