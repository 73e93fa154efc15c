"""The evidence report's release sections: reviews and promotion requests, releases and their alias
moves. Part of ``html_sections.sections``."""

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
    table,
    text,
    when,
)


def approvals_section(doc: dict[str, Any], page: Page) -> str:
    """The reviews and promotion requests, with who approved what."""
    ev = doc.get("evaluations") or {}
    reviews = ev.get("reviews") or []
    requests = doc.get("promotion_requests") or []
    if not reviews and not requests:
        return nothing_of("no review and no promotion request")
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
        parts.append(record_section(r["id"], f"review <code>{escape(r['id'])}</code>", facts(rows)))
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
        parts.append(record_section(q["id"], f"promotion request <code>{escape(q['id'])}</code>", body))
    return "".join(parts)


def releases_section(doc: dict[str, Any], page: Page) -> str:
    """The releases and every move of their aliases."""
    releases = doc.get("releases") or []
    moves = doc.get("alias_events") or []
    if not releases and not moves:
        return nothing_of("no release")
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
        parts.append(record_section(r["id"], f"release {escape(str(r.get('ref')))}", body))
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
    return record_section(m["id"], title, facts(rows))


def _sibling(page: Page, m: dict[str, Any]) -> str | None:
    """The ref of the release a move left (the model's, at ``from_version``), when the page names its
    model; None: the id is shown."""
    to_ref = page.labels.get(str(m.get("to_release")), "")
    if "@" not in to_ref or m.get("from_version") is None:
        return page.labels.get(str(m.get("from_release")))
    return f"{to_ref.rsplit('@', 1)[0]}@{m.get('from_version')}"
