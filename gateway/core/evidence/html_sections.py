"""The evidence report's sections, one per object, each with what a reviewer checks there.

Each section function takes the document (or one record) and the ``Page``
and returns HTML; ``sections`` returns ``(anchor, title, html)`` in the
chain's order, then the audit trail.
"""

from __future__ import annotations

from html import escape
from typing import Any

from gateway.core.evidence.html_env import environments
from gateway.core.evidence.html_parts import (
    Page,
    badge,
    check,
    facts,
    money,
    seconds,
    short,
    table,
    text,
    when,
)


def sections(doc: dict[str, Any], page: Page) -> list[tuple[str, str, str]]:
    """Every section of the report: (anchor, title, html)."""
    ev = doc.get("evaluations") or {}
    out = [
        ("datasets", "Dataset versions", _datasets(page)),
        ("runs", "Runs", "".join(_run(r, page) for r in doc.get("runs") or []) or _none("no run")),
        ("environments", "Environments", environments(doc)),
        ("artifacts-list", "Artifacts", _artifacts(page)),
        ("evaluations", "Eval results", _evaluations(ev, page)),
        ("gates", "Gate decisions", _gates(ev, page)),
        ("approvals", "Reviews and promotion requests", _approvals(doc, page)),
        ("releases", "Releases and alias moves", _releases(doc, page)),
        ("audit-trail", "Audit trail", _audit(doc.get("audit") or {})),
    ]
    return [(anchor, title, f"<h2 id='{anchor}'>{escape(title)}</h2>{html}") for anchor, title, html in out]


def _none(what: str) -> str:
    return f"<p class=muted>{escape(what)} in this bundle</p>"


def _section(record_id: str, title: str, body: str) -> str:
    return f"<section class=obj id='{escape(record_id)}'><h3>{title}</h3>{body}</section>"


def _datasets(page: Page) -> str:
    if not page.dataset_versions:
        return _none("no dataset version (the runs read plain paths, or none)")
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
        parts.append(_section(dv["id"], escape(f"{dv.get('dataset')}@{dv.get('version')}"), facts(rows)))
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
    return _section(
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


def _evaluations(ev: dict[str, Any], page: Page) -> str:
    runs = ev.get("eval_runs") or []
    if not runs:
        return _none("no evaluation")
    parts = [
        check(
            "What to check",
            [
                "the suite version and harness version (results of other versions are not comparable)",
                "the file evaluated (its sha256) and the per-task numbers with their standard errors",
            ],
        )
    ]
    for run in runs:
        result = run.get("result") or {}
        sha = run.get("artifact_sha256")
        anchor = page.anchor_of_sha(sha)
        scored = f"<a href='#{escape(anchor)}'>{short(sha)}</a>" if anchor else f"<code>{short(sha)}</code>"
        rows = [
            ("suite version", text(result.get("suite_version") or run.get("suite_ref"))),
            ("suite hash", f"<code>{short(result.get('suite_hash'), 16)}</code>"),
            ("harness", text(f"{result.get('harness')} {result.get('harness_version')}" if result else None)),
            ("model file", scored + f" ({text(run.get('artifact_path'))})"),
            ("eval job (run)", page.ref(run.get("run_id"))),
            ("status", badge(run.get("status")) + (f" {text(run.get('note'))}" if run.get("note") else "")),
            ("asked by, when", f"{text(run.get('submitted_by'))}, {when(run.get('created_at'))}"),
            ("seeds", text(result.get("seeds"))),
        ]
        tasks = [
            [
                escape(f"{t.get('name')} (v{t.get('version')})"),
                escape(str(m)),
                _value(v.get("value"), v.get("stderr")),
                escape(f"{t.get('n_effective')} of {t.get('n_original')}"),
                escape(str(t.get("n_shot"))),
            ]
            for t in result.get("tasks") or []
            for m, v in (t.get("metrics") or {}).items()
        ]
        body = facts(rows) + table(["task", "metric", "value \u00b1 stderr", "samples", "shots"], tasks)
        head = (
            f"result <code>{escape(str(result.get('id')))}</code> "
            f"of eval run <code>{escape(run['id'])}</code>"
        )
        if result.get("id"):
            body = f"<span id='{escape(run['id'])}'></span>" + body
            parts.append(_section(result["id"], head, body))
        else:
            parts.append(_section(run["id"], head, body))
    return "".join(parts)


def _value(value: Any, stderr: Any) -> str:
    if not isinstance(value, int | float):
        return "-"
    return escape(f"{value:.4g}" + (f" \u00b1 {stderr:.2g}" if isinstance(stderr, int | float) else ""))


def _gates(ev: dict[str, Any], page: Page) -> str:
    gates = ev.get("gates") or []
    if not gates:
        return _none("no gate decision")
    parts = [
        check(
            "What to check",
            [
                "the suite version and the thresholds it holds the candidate to",
                "against a baseline: each task's change with its interval, the test, the p-value "
                "(adjusted for the number of tasks) and the margin",
                "the verdict, the reasons, the reviews it counted and who decided",
            ],
        )
    ]
    for gate in gates:
        parts.append(_gate(gate, page))
    return "".join(parts)


def _gate(gate: dict[str, Any], page: Page) -> str:
    decision = gate.get("decision") or {}
    made_for = gate.get("made_for") or {}
    purpose = (
        f"decided by the gateway for moving {escape(str(made_for.get('alias')))} to "
        f"{page.ref(made_for.get('release_id'), made_for.get('release'))}"
        if made_for
        else "asked for by a person"
    )
    rows = [
        ("verdict", badge(gate.get("verdict"))),
        ("suite", text(made_for.get("suite_version") or decision.get("suite"))),
        ("suite hash", f"<code>{short(decision.get('suite_hash'), 16)}</code>"),
        ("candidate result", page.ref(gate.get("candidate_id"))),
        (
            "baseline result",
            page.ref(gate.get("baseline_id")) + escape(f" ({gate.get('baseline_source')})")
            if gate.get("baseline_id")
            else escape(f"none ({gate.get('baseline_source')})"),
        ),
        ("why", purpose),
        ("reviews", _gate_reviews(gate, decision, page)),
        ("decided", f"{when(gate.get('decided_at'))} by {text(gate.get('decided_by'))}"),
    ]
    thresholds = [
        [
            escape(str(t.get("task"))),
            escape(str(t.get("metric"))),
            _value(t.get("value"), None),
            escape(f"{t.get('op')} {t.get('bound')}"),
            badge("pass" if t.get("passed") else "fail"),
        ]
        for t in decision.get("thresholds") or []
    ]
    comparisons = [_comparison(c) for c in decision.get("comparisons") or []]
    body = [
        facts(rows),
        "<h4>Thresholds</h4>",
        table(["task", "metric", "candidate", "rule", ""], thresholds, "no threshold in the suite"),
        "<h4>Against the baseline</h4>",
        table(
            [
                "task",
                "metric",
                "baseline \u2192 candidate",
                "change [interval]",
                "test",
                "p (adjusted)",
                "margin",
                "",
            ],
            comparisons,
            "; ".join(decision.get("notes") or []) or "no comparison",
        ),
    ]
    reasons = decision.get("reasons") or []
    if reasons:
        body.append("<h4>Reasons</h4><ul>" + "".join(f"<li>{escape(str(r))}</li>" for r in reasons) + "</ul>")
    notes = [n for n in decision.get("notes") or [] if comparisons]
    if notes:
        body.append("<p class=muted>" + escape("; ".join(str(n) for n in notes)) + "</p>")
    title = f"gate <code>{escape(gate['id'])}</code> {badge(gate.get('verdict'))}"
    return _section(gate["id"], title, "".join(body))


def _gate_reviews(gate: dict[str, Any], decision: dict[str, Any], page: Page) -> str:
    ids = gate.get("review_ids") or []
    counted = ", ".join(page.ref(r) for r in ids) or "none"
    need = decision.get("reviews_required")
    approving = escape(str(decision.get("approving_reviews", 0)))
    out = f"{approving} approving of {escape(str(need))} required: {counted}"
    not_counted = gate.get("reviews_not_counted") or []
    if not_counted:
        out += f"; not counted: {text(not_counted)}"
    return out


def _comparison(c: dict[str, Any]) -> list[str]:
    t = c.get("test") or {}
    conf = 1 - t.get("alpha", 0.05) if isinstance(t.get("alpha"), int | float) else 0.95
    interval = (
        f"{t['delta']:+.4g} [{t['ci_low']:+.4g}, {t['ci_high']:+.4g}] ({conf:.0%})"
        if all(isinstance(t.get(k), int | float) for k in ("delta", "ci_low", "ci_high"))
        else "-"
    )
    p = t.get("p_value")
    pa = c.get("p_adjusted")
    ps = f"{p:.3g} ({pa:.3g})" if isinstance(p, int | float) and isinstance(pa, int | float) else "-"
    means = (
        f"{t['baseline_mean']:.4g} \u2192 {t['candidate_mean']:.4g}"
        if isinstance(t.get("baseline_mean"), int | float)
        and isinstance(t.get("candidate_mean"), int | float)
        else "-"
    )
    verdict = "fail" if c.get("regression") else ("pass" if c.get("passed") else "warn")
    word = "regression" if c.get("regression") else ("ok" if c.get("passed") else "not shown")
    return [
        escape(str(c.get("task"))),
        escape(str(c.get("metric"))),
        escape(means),
        escape(interval),
        escape(f"{t.get('method')}, n={t.get('n')}"),
        escape(ps),
        escape(f"{c.get('margin')} ({str(c.get('decision')).replace('_', '-')})"),
        f"<span class='badge {verdict}'>{escape(word)}</span>",
    ]


def _approvals(doc: dict[str, Any], page: Page) -> str:
    ev = doc.get("evaluations") or {}
    reviews = ev.get("reviews") or []
    requests = doc.get("promotion_requests") or []
    if not reviews and not requests:
        return _none("no review and no promotion request")
    parts = [
        check(
            "What to check",
            ["who reviewed or approved, what they said, and that no one approved their own request"],
        )
    ]
    for r in reviews:
        rows = [
            ("verdict", badge(r.get("verdict"))),
            ("of", f"{escape(str(r.get('target_type')))} {page.ref(r.get('target_id'))}"),
            ("by, when", f"{text(r.get('reviewer'))}, {when(r.get('created_at'))}"),
            ("note", text(r.get("notes"))),
            ("samples looked at", text(len(r.get("samples") or []))),
            (
                "current",
                "yes" if r.get("current", True) else f"no, superseded by {page.ref(r.get('superseded_by'))}",
            ),
        ]
        parts.append(_section(r["id"], f"review <code>{escape(r['id'])}</code>", facts(rows)))
    for q in requests:
        decisions = [
            [badge(d.get("decision")), text(d.get("decider")), text(d.get("note")), when(d.get("at"))]
            for d in q.get("decisions") or []
        ]
        rows = [
            (
                "asks",
                escape(
                    f"move {q.get('alias')} of {q.get('project')}/{q.get('model')} to v{q.get('version')}"
                ),
            ),
            ("release", page.ref(q.get("release_id"))),
            ("by, when", f"{text(q.get('requested_by'))}, {when(q.get('at'))}"),
            ("reason", text(q.get("reason"))),
            ("status", badge(q.get("status"))),
            ("approved by", text(q.get("approvers"))),
        ]
        body = facts(rows) + table(["decision", "by", "note", "when"], decisions, "no decision yet")
        parts.append(_section(q["id"], f"promotion request <code>{escape(q['id'])}</code>", body))
    return "".join(parts)


def _releases(doc: dict[str, Any], page: Page) -> str:
    releases = doc.get("releases") or []
    moves = doc.get("alias_events") or []
    if not releases and not moves:
        return _none("no release")
    parts = [
        check(
            "What to check",
            [
                "the release points at the file you hold (sha256) and the run that made it",
                "each alias move: the policy in force then, the gate it counted, the approvals that "
                "counted, and whether it was an override (then its reason)",
            ],
        )
    ]
    for r in releases:
        sha = r.get("artifact_sha256")
        anchor = page.anchor_of_sha(sha)
        file = (
            f"<a href='#{escape(anchor)}'>{escape(str(r.get('artifact_path')))}</a>"
            if anchor
            else text(r.get("artifact_path"))
        )
        events = [
            [badge(e.get("status")), text(e.get("reason")), text(e.get("actor")), when(e.get("at"))]
            for e in r.get("status_events") or []
        ]
        rows = [
            ("release", escape(str(r.get("ref")))),
            ("status", badge(r.get("status"))),
            ("file", file + f" <code>{escape(str(sha))}</code>"),
            ("made by run", page.ref(r.get("run_id"))),
            ("created", f"{when(r.get('created_at'))} by {text(r.get('created_by'))}"),
            ("notes", text(r.get("notes"))),
        ]
        body = (
            facts(rows)
            + "<h4>Status changes</h4>"
            + table(["status", "reason", "by", "when"], events, "none since it was made")
        )
        parts.append(_section(r["id"], f"release {escape(str(r.get('ref')))}", body))
    for m in moves:
        parts.append(_move(m, page))
    return "".join(parts)


def _move(m: dict[str, Any], page: Page) -> str:
    policy = m.get("policy") or {}
    if policy:
        gate = (
            f"a passing gate of {policy.get('gate_suite')}@{policy.get('gate_version', 'latest')} against "
            f"{policy.get('gate_baseline') or 'no baseline'}"
            if policy.get("gate_suite")
            else "no gate"
        )
        in_force = escape(
            f"{policy.get('scope')} policy for {policy.get('alias')}: "
            f"moved by {', '.join(policy.get('roles') or []) or 'anyone'}, "
            f"{policy.get('approvals', 0)} approval(s) needed, {gate}"
        )
    else:
        in_force = "no policy: the alias is not protected"
    override = (
        f"<b class=fail>OVERRIDE</b>: {text(m.get('reason'))}"
        if m.get("override")
        else "no: the policy's conditions were met"
    )
    rows = [
        ("move", escape(f"{m.get('alias')}: v{m.get('from_version') or '-'} \u2192 v{m.get('to_version')}")),
        ("to release", page.ref(m.get("to_release"))),
        (
            "from release",
            page.ref(m.get("from_release"), _sibling(page, m)) if m.get("from_release") else "none (first)",
        ),
        ("policy in force", in_force),
        ("gate counted", page.ref(m.get("gate_id")) if m.get("gate_id") else "none"),
        ("approvals that counted", text(m.get("approvals")) if m.get("approvals") else "none"),
        ("request", page.ref(m.get("request_id")) if m.get("request_id") else "none (moved directly)"),
        ("override", override),
        (
            "moved",
            f"{when(m.get('at'))} by {text(m.get('actor'))}"
            + (f": {text(m.get('reason'))}" if not m.get("override") else ""),
        ),
    ]
    title = f"alias move {escape(str(m.get('alias')))} #{escape(str(m.get('seq')))}"
    return _section(m["id"], title, facts(rows))


def _sibling(page: Page, m: dict[str, Any]) -> str | None:
    """The ref of the release a move left (the model's, at ``from_version``), when the page names its
    model; None: the id is shown."""
    to_ref = page.labels.get(str(m.get("to_release")), "")
    if "@" not in to_ref or m.get("from_version") is None:
        return page.labels.get(str(m.get("from_release")))
    return f"{to_ref.rsplit('@', 1)[0]}@{m.get('from_version')}"


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
