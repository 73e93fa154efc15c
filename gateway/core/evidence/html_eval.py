"""The evidence report's evaluation sections: eval results (per task and metric) and gate decisions
(rules, comparisons with the baseline, counted reviews). Part of ``html_sections.sections``."""

from __future__ import annotations

from html import escape
from typing import Any

from gateway.core.evidence.html_parts import (
    Page,
    badge,
    check,
    facts,
    nothing_of,
    record_section,
    short,
    table,
    text,
    when,
)


def eval_results_section(ev: dict[str, Any], page: Page) -> str:
    """The eval runs and their results, per task and metric."""
    runs = ev.get("eval_runs") or []
    if not runs:
        return nothing_of("no evaluation")
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
            parts.append(record_section(result["id"], head, body))
        else:
            parts.append(record_section(run["id"], head, body))
    return "".join(parts)


def _value(value: Any, stderr: Any) -> str:
    if not isinstance(value, int | float):
        return "-"
    return escape(f"{value:.4g}" + (f" \u00b1 {stderr:.2g}" if isinstance(stderr, int | float) else ""))


def gates_section(ev: dict[str, Any], page: Page) -> str:
    """The gate decisions: rule, numbers, baseline comparison, verdict and counted reviews."""
    gates = ev.get("gates") or []
    if not gates:
        return nothing_of("no gate decision")
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
    return record_section(gate["id"], title, "".join(body))


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
