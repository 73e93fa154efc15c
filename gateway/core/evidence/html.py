"""``index.html`` of an evidence bundle: the facts of ``evidence.json`` as one readable page.

Self-contained: inline CSS, no script, no image, no link off the page (only
anchors within it), so it opens the same anywhere, offline. Every value is
HTML-escaped. The chain at the top draws the links: dataset versions ->
runs -> artifacts -> eval results -> gate decisions -> releases -> aliases.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0 1em;width:100%}td,th{border:1px solid #ddd;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f4f4f4}code,pre{font:12px ui-monospace,monospace}
pre{background:#f8f8f8;padding:.6em;overflow-x:auto;white-space:pre-wrap}
.chain{display:flex;flex-wrap:wrap;gap:.3em;align-items:center}.node{border:1px solid #888;border-radius:4px;
padding:.3em .6em;background:#fafafa}.arrow{color:#888}.pass{color:#0a0}.fail{color:#b00}.warn{color:#a60}
"""


def _e(value: Any) -> str:
    if value is None:
        return "<span class=warn>-</span>"
    if isinstance(value, dict | list):
        return f"<code>{escape(json.dumps(value, sort_keys=True))}</code>"
    return escape(str(value))


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _pairs(record: dict[str, Any], keys: list[str]) -> str:
    return (
        "<table>"
        + "".join(f"<tr><th>{escape(k)}</th><td>{_e(record.get(k))}</td></tr>" for k in keys)
        + "</table>"
    )


def _chain(doc: dict[str, Any]) -> str:
    steps: list[tuple[str, list[str]]] = []
    datasets = {
        d["version"]["dataset"] + "@" + str(d["version"]["version"]) + " " + d["version"]["digest"][:12]
        for r in doc.get("runs", [])
        for d in r.get("datasets", [])
        if d.get("version")
    }
    steps.append(("dataset versions", sorted(datasets)))
    steps.append(
        ("runs", [f"<a href='#{escape(r['id'])}'>{escape(r['id'])}</a>" for r in doc.get("runs", [])])
    )
    steps.append(
        ("artifacts", [escape(a["path"]) + " " + escape(a["sha256"][:12]) for a in doc.get("artifacts", [])])
    )
    ev = doc.get("evaluations", {})
    steps.append(
        ("eval results", [escape(e["result"]["id"]) for e in ev.get("eval_runs", []) if e.get("result")])
    )
    steps.append(
        (
            "gate decisions",
            [
                f"{escape(g['id'])} <b class={'pass' if g['verdict'] == 'pass' else 'fail'}>"
                f"{escape(g['verdict'])}</b>"
                for g in ev.get("gates", [])
            ],
        )
    )
    steps.append(
        ("releases", [escape(r["ref"]) + f" ({escape(r['status'])})" for r in doc.get("releases", [])])
    )
    steps.append(
        (
            "alias moves",
            [
                f"{escape(m['alias'])} &rarr; v{escape(str(m['to_version']))}"
                + (" <b class=warn>override</b>" if m.get("override") else "")
                for m in doc.get("alias_events", [])
            ],
        )
    )
    parts = []
    for title, items in steps:
        shown = "<br>".join(items) if items else "<em>none</em>"
        parts.append(f"<div class=node><b>{escape(title)}</b><br>{shown}</div>")
    return "<div class=chain>" + "<span class=arrow>&rarr;</span>".join(parts) + "</div>"


def _run(run: dict[str, Any]) -> str:
    out = [f"<h3 id='{escape(run['id'])}'>run {escape(run['id'])} ({escape(run.get('name') or '')})</h3>"]
    out.append(
        _pairs(
            run,
            [
                "project",
                "queue",
                "submitter",
                "state",
                "created_at",
                "spec_sha256",
                "script_sha256",
                "code",
                "environment",
                "params",
                "parent_run_id",
            ],
        )
    )
    datasets = [
        {
            "ref": d["ref"],
            "version": (d.get("version") or {}).get("version"),
            "digest": (d.get("version") or {}).get("digest"),
            "path": d["path"],
        }
        for d in run.get("datasets", [])
    ]
    out.append("<b>dataset versions</b>" + _table(datasets, ["ref", "version", "digest", "path"]))
    out.append(
        "<b>attempts</b>"
        + _table(
            run.get("attempt_history", []),
            [
                "number",
                "job_id",
                "state",
                "origin",
                "node_list",
                "submit_time",
                "start_time",
                "end_time",
                "pending_s",
                "pending_reasons",
                "elapsed_s",
                "alloc_tres",
                "exit_code",
                "failure_class",
            ],
        )
    )
    out.append("<b>artifacts</b>" + _table(run.get("artifacts", []), ["path", "size", "sha256", "attempt"]))
    out.append(
        f"<details><summary>rendered script</summary><pre>{escape(run.get('script') or '')}</pre></details>"
    )
    return "".join(out)


def _records(doc: dict[str, Any]) -> list[str]:
    """The evaluations, releases, alias moves and promotion requests sections."""
    ev = doc.get("evaluations", {})
    parts: list[str] = []
    results = [
        e["result"] | {"eval_run": e["id"], "status": e["status"]}
        for e in ev.get("eval_runs", [])
        if e.get("result")
    ]
    parts += [
        "<h2>Evaluations</h2>",
        _table(
            results,
            [
                "id",
                "eval_run",
                "suite_version",
                "harness",
                "harness_version",
                "artifact_sha256",
                "tasks",
                "created_at",
            ],
        ),
    ]
    parts += [
        "<h3>Gate decisions</h3>",
        _table(
            ev.get("gates", []),
            ["id", "verdict", "candidate_id", "baseline_id", "review_ids", "decided_by", "decided_at"],
        ),
    ]
    parts += [
        "<h3>Reviews</h3>",
        _table(ev.get("reviews", []), ["id", "target_id", "verdict", "reviewer", "notes", "created_at"]),
    ]
    parts += [
        "<h2>Releases</h2>",
        _table(
            doc.get("releases", []),
            [
                "ref",
                "status",
                "artifact_sha256",
                "run_id",
                "created_by",
                "created_at",
                "notes",
                "status_events",
            ],
        ),
    ]
    parts += [
        "<h3>Alias moves</h3>",
        _table(
            doc.get("alias_events", []),
            [
                "alias",
                "seq",
                "from_version",
                "to_version",
                "actor",
                "at",
                "reason",
                "approvals",
                "gate_id",
                "override",
                "policy",
            ],
        ),
    ]
    parts += [
        "<h3>Promotion requests</h3>",
        _table(
            doc.get("promotion_requests", []),
            ["id", "alias", "version", "requested_by", "status", "reason", "decisions"],
        ),
    ]
    return parts


def render_index(doc: dict[str, Any]) -> str:
    """The page of an evidence document (``evidence.json``'s content), as one HTML string."""
    subject = doc.get("subject", {})
    redaction = doc.get("redaction")
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>Evidence: {escape(str(subject.get('label')))}</title><style>{CSS}</style></head><body>",
        f"<h1>Evidence: {escape(str(subject.get('type')))} {escape(str(subject.get('label')))}</h1>",
        _pairs(doc, ["schema", "schema_version", "generated_at", "generated_by", "gateway_version"]),
    ]
    if redaction:
        parts.append(f"<p class=warn><b>Redacted</b>: {_e(redaction.get('replaced'))}</p>")
    parts += ["<h2>Links</h2>", _chain(doc), "<h2>Runs</h2>", *(_run(r) for r in doc.get("runs", []))]
    parts += _records(doc)
    audit = doc.get("audit", {})
    parts += [
        "<h2>Audit trail</h2>",
        f"<p>{_e(audit.get('note'))}</p>",
        _table(
            audit.get("events", []),
            ["seq", "at", "actor", "action", "target_type", "target_id", "after", "hash"],
        ),
    ]
    parts.append("</body></html>\n")
    return "".join(parts)
