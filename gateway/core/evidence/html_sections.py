"""The evidence report's sections, one per object, each with what a reviewer checks there.

Each section function takes the document (or one record) and the ``Page``
and returns HTML; ``sections`` returns ``(anchor, title, html)`` in the
chain's order, then the audit trail.
"""

from __future__ import annotations

from html import escape
from typing import Any

from gateway.core.evidence.html_env import environments
from gateway.core.evidence.html_eval import eval_results_section, gates_section
from gateway.core.evidence.html_parts import (
    Page,
    badge,
    check,
    facts,
    money,
    nothing_of,
    record_section,
    seconds,
    short,
    table,
    text,
    when,
)
from gateway.core.evidence.html_releases import approvals_section, releases_section


def sections(doc: dict[str, Any], page: Page) -> list[tuple[str, str, str]]:
    """Every section of the report: (anchor, title, html)."""
    ev = doc.get("evaluations") or {}
    out = [
        ("datasets", "Dataset versions", _datasets(page)),
        ("runs", "Runs", "".join(_run(r, page) for r in doc.get("runs") or []) or nothing_of("no run")),
        ("environments", "Environments", environments(doc)),
        ("artifacts-list", "Artifacts", _artifacts(page)),
        ("evaluations", "Eval results", eval_results_section(ev, page)),
        ("gates", "Gate decisions", gates_section(ev, page)),
        ("approvals", "Reviews and promotion requests", approvals_section(doc, page)),
        ("releases", "Releases and alias moves", releases_section(doc, page)),
        ("audit-trail", "Audit trail", _audit(doc.get("audit") or {})),
    ]
    return [(anchor, title, f"<h2 id='{anchor}'>{escape(title)}</h2>{html}") for anchor, title, html in out]


def _datasets(page: Page) -> str:
    if not page.dataset_versions:
        return nothing_of("no dataset version (the runs read plain paths, or none)")
    parts = [
        check(
            "What to check",
            [
                "the version each run read is the one registered (same digest: content, not a path)",
                "where it came from (source) and the version it was made from, if any",
            ],
        )
    ]
    for dv in page.dataset_versions.values():
        rows = [
            ("dataset", escape(f"{dv.get('dataset')} version {dv.get('version')}")),
            ("digest (sha256 of the files)", f"<code>{escape(str(dv.get('digest')))}</code>"),
            ("files, bytes", escape(f"{dv.get('file_count')} file(s), {dv.get('total_bytes')} bytes")),
            ("description", text(dv.get("description"))),
            ("source", text(dv.get("source_uri") or dv.get("path"))),
            ("made from", page.ref(dv.get("parent_id")) if dv.get("parent_id") else "no parent version"),
            ("made by run", page.ref(dv.get("made_by_run_id")) if dv.get("made_by_run_id") else "-"),
            ("registered", f"{when(dv.get('registered_at'))} by {text(dv.get('registered_by'))}"),
        ]
        title = escape(f"{dv.get('dataset')}@{dv.get('version')}")
        parts.append(record_section(dv["id"], title, facts(rows)))
    return "".join(parts)


def _run(run: dict[str, Any], page: Page) -> str:
    datasets = ", ".join(
        page.ref((d.get("version") or {}).get("id"), d.get("ref"))
        if d.get("version")
        else text(d.get("path"))
        for d in run.get("datasets") or []
    )
    code = run.get("code") or {}
    code_text = (
        escape(f"{code.get('repo')} @ {str(code.get('commit'))[:12]}")
        + (" <b class=warn>with uncommitted changes</b>" if code.get("dirty") else "")
        if code
        else "<span class=muted>not recorded (no git repository)</span>"
    )
    spec = run.get("spec") or {}
    res = spec.get("resources") or {}
    asked = ", ".join(f"{k} {v}" for k, v in res.items() if v not in (None, 0, False) and k in _RESOURCE_KEYS)
    rows = [
        ("name, id", escape(f"{run.get('name')} ({run['id']})")),
        ("project, queue", escape(f"{run.get('project')}, {run.get('queue')}")),
        ("submitted", f"{when(run.get('created_at'))} by {text(run.get('submitter'))}"),
        ("state", badge(run.get("state"))),
        ("command", f"<code>{escape(str(spec.get('command') or '-'))}</code>"),
        ("resources asked", escape(asked) or "-"),
        ("data read", datasets or "none"),
        ("code", code_text),
        ("environment", text(run.get("environment"))),
        ("params", text(run.get("params"))),
        ("rerun of", page.ref(run.get("parent_run_id")) if run.get("parent_run_id") else "-"),
        ("spec sha256", f"<code>{escape(str(run.get('spec_sha256')))}</code>"),
        ("script sha256", f"<code>{escape(str(run.get('script_sha256')))}</code>"),
        ("cost", _cost(run.get("cost"))),
    ]
    attempts = [
        [
            escape(str(a.get("number"))),
            escape(f"{a.get('job_id')} ({a.get('origin')})"),
            badge(a.get("state")),
            text(a.get("node_list")),
            seconds(a.get("pending_s"))
            + (f"<br>{text(a.get('pending_reasons'))}" if a.get("pending_reasons") else ""),
            seconds(a.get("elapsed_s")),
            text(a.get("exit_code")),
            _failure(a.get("failure")),
        ]
        for a in run.get("attempt_history") or []
    ]
    body = [
        check(
            "What to check",
            [
                "the data versions and code the run read, and the command it ran",
                "each attempt: where it ran, how long it waited and ran, how it ended (a failure with "
                "its class, evidence and what to do)",
                "the rendered script below matches its sha256",
            ],
        ),
        facts(rows),
        "<h4>Attempts</h4>",
        table(
            ["#", "Slurm job", "state", "node", "waited", "ran", "exit", "failure"], attempts, "no attempt"
        ),
        f"<details><summary>rendered sbatch script ({len((run.get('script') or '').splitlines())} lines)"
        f"</summary><pre>{escape(run.get('script') or '')}</pre></details>",
    ]
    return record_section(
        run["id"], escape(f"run {run.get('name')}") + f" <code>{escape(run['id'])}</code>", "".join(body)
    )


_RESOURCE_KEYS = ("nodes", "cpus_per_task", "mem_gb", "gpus", "gpus_per_node", "gpu_type", "walltime_min")


def _failure(failure: Any) -> str:
    if not failure:
        return "-"
    evidence = failure.get("evidence") or {}
    step = (evidence.get("failing_step") or {}).get("step")
    parts = [f"<b>{escape(str(failure.get('class')))}</b>: {escape(str(failure.get('summary') or ''))}"]
    if step:
        parts.append(f"step {escape(str(step))}")
    if failure.get("action"):
        parts.append(f"to do: {escape(str(failure['action']))}")
    return "<br>".join(parts)


def _cost(cost: Any) -> str:
    if not cost:
        return "<span class=muted>not priced yet (no accounting record)</span>"
    failed = cost.get("failed_total")
    out = money(cost.get("total"), cost.get("currency"))
    if failed:
        out += f", of which failed attempts {money(failed, cost.get('currency'))}"
    return out + f" <span class=muted>({escape(str(cost.get('note') or ''))})</span>"


def _artifacts(page: Page) -> str:
    rows = [
        [
            f"<span id='{escape(page.artifact_anchor(a))}'>{escape(str(a.get('path')))}</span>",
            escape(str(a.get("size"))),
            f"<code>{escape(str(a.get('sha256')))}</code>",
            page.ref(a.get("run_id")) + escape(f", attempt {a.get('attempt')}"),
        ]
        for a in page.artifacts
    ]
    return (
        "<div id=artifacts>"
        + check("What to check", ["the released or evaluated file's sha256 is the one you hold"])
        + table(["path", "bytes", "sha256", "written by"], rows, "no artifact")
        + "</div>"
    )


def _audit(audit: dict[str, Any]) -> str:
    rows = [
        [
            escape(str(e.get("seq"))),
            when(e.get("at")),
            text(e.get("actor")),
            escape(str(e.get("action"))),
            escape(f"{e.get('target_type')} {e.get('target_id')}"),
            f"<code>{short(e.get('hash'), 16)}</code>",
        ]
        for e in audit.get("events") or []
    ]
    return (
        "<div id=audit>"
        + f"<p>{escape(str(audit.get('note') or ''))}</p>"
        + table(["#", "when", "who", "action", "on", "hash"], rows, "no audit event")
        + "</div>"
    )
