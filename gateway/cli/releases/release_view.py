"""How ``gw model``, ``gw release`` and ``gw trace`` show the registry: tables and tree branches."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.tree import Tree


def _when(text: str | None) -> str:
    return (text or "-").replace("T", " ")[:19]


def releases_table(items: list[dict[str, Any]]) -> Table:
    """A table of releases (``ReleasePublic``)."""
    table = Table(show_edge=False, header_style="bold")
    for column in ("release", "status", "artifact", "run", "by", "created", "notes"):
        table.add_column(column)
    for r in items:
        status = r["status"] if r["status"] == "active" else f"[yellow]{r['status']}[/yellow]"
        table.add_row(
            escape(r["ref"]),
            status,
            r["artifact_sha256"][:16],
            r["run_id"],
            escape(r["created_by"]),
            _when(r["created_at"]),
            escape(r["notes"][:60]),
        )
    return table


def move_line(m: dict[str, Any]) -> str:
    """One alias move in words (markup-escaped)."""
    line = (
        f"{_when(m['at'])}  {escape(m['alias'])}: v{m['from_version'] or '-'} -> v{m['to_version'] or '-'}"
        f"  by {escape(m['actor'])}"
    )
    if m.get("approvals"):
        line += f", approved by {escape(', '.join(m['approvals']))}"
    if m.get("gate_id"):
        line += f", gate {m['gate_id']}"
    if m.get("override"):
        line += "  [bold red]OVERRIDE[/bold red]"
    if m.get("reason"):
        line += f"  ({escape(m['reason'])})"
    return line


def history_lines(found: dict[str, Any]) -> list[str]:
    """``GET /models/.../history``: every move, then where the aliases stood at the asked time."""
    lines = [
        f"[bold]{escape(found['model'])}[/bold] alias history"
        + (f" ({found['alias']})" if found["alias"] else "")
    ]
    lines += [move_line(m) for m in found["events"]] or ["no alias moves yet"]
    if found.get("at_time") is not None:
        lines.append(f"[bold]at {_when(found['at'])}[/bold]")
        for s in found["at_time"]:
            where = (
                f"v{s['version']} (since {_when(s['since'])})" if s["version"] else "pointed at nothing yet"
            )
            lines.append(f"  {escape(s['alias'])}: {where}")
        if not found["at_time"]:
            lines.append("  no alias existed yet")
    return lines


def check_lines(c: dict[str, Any]) -> list[str]:
    """A move before it is made: what it counts and what it misses (markup-escaped)."""
    policy = c.get("policy")
    verdict = "[bold green]would move[/bold green]" if c["ok"] else "[bold red]would be refused[/bold red]"
    lines = [f"{escape(c['alias'])} -> {escape(c['release'])} ({escape(c['release_status'])}): {verdict}"]
    if policy:
        gate = (
            f"gate {escape(policy['gate_suite'])}@{policy['gate_version']}"
            if policy.get("gate_suite")
            else "no gate"
        )
        if policy.get("advisory_severity"):
            gate += f", no known {policy['advisory_severity']}-or-worse advisory"
        lines.append(
            f"  policy ({policy['scope']}): moved by {escape(', '.join(policy['roles']))}, "
            f"{policy['approvals']} approval(s), {gate}"
        )
    else:
        lines.append("  no policy: the alias is not protected")
    if c.get("gate_detail"):
        lines.append(f"  gate: {escape(c['gate_detail'])}")
    if (adv := c.get("advisories")) is not None:
        if adv.get("unchecked"):
            lines.append(f"  advisories: not checked ({escape(adv['unchecked'])})")
        elif adv.get("environment") is None:
            lines.append("  advisories: the release's run named no registered environment")
        else:
            found = adv.get("findings") or []
            lines.append(f"  advisories in {escape(adv['environment'])}: {len(found) or 'none'}")
            for f in found:
                what = f"{escape(f['package'])} {escape(f['version'])}"
                lines.append(f"    {escape(f['advisory'])} {f['severity']} {what}")
    lines.append(f"  approvals that count: {escape(', '.join(c['approvals'])) or 'none'}")
    for d in c.get("approvals_not_counted", []):
        lines.append(f"  not counted: {escape(d['user'])} ({escape(d['why'])})")
    if c.get("already"):
        lines.append("  it points at this release already")
    for m in c.get("missing", []):
        lines.append(f"  missing: {escape(m)}")
    if c.get("may_override"):
        lines.append("  only the gate or the advisory rule is missing: you may --override with a --reason")
    return lines


def request_lines(q: dict[str, Any]) -> list[str]:
    """A promotion request and its decisions."""
    lines = [
        f"{q['id']}  {escape(q['project'])}/{escape(q['model'])}@{q['version']} -> {escape(q['alias'])}  "
        f"[bold]{q['status']}[/bold]  requested by {escape(q['requested_by'])} {_when(q['at'])}"
        + (f"  ({escape(q['reason'])})" if q.get("reason") else "")
    ]
    for d in q.get("decisions", []):
        lines.append(f"  {d['decision']} by {escape(d['decider'])} {_when(d['at'])}  {escape(d['note'])}")
    return lines


def release_lines(r: dict[str, Any]) -> list[str]:
    """A release with its status events and alias moves (``ReleaseDetail``)."""
    lines = [
        f"[bold]{escape(r['ref'])}[/bold]  {r['status']}  by {escape(r['created_by'])} "
        f"{_when(r['created_at'])}",
        f"artifact {r['artifact_sha256']}  {escape(r['artifact_path'])} of run {r['run_id']}",
    ]
    if r.get("notes"):
        lines.append(f"notes: {escape(r['notes'])}")
    for s in r.get("status_events", []):
        lines.append(f"{_when(s['at'])}  marked {s['status']} by {escape(s['actor'])}: {escape(s['reason'])}")
    if r.get("overridden"):
        lines.append(
            "[bold red]an alias was moved to this release past a failed or missing gate (override)[/bold red]"
        )
    lines += [move_line(m) for m in r.get("alias_events", [])]
    return lines


def releases_branch(found: dict[str, Any], tree: Tree) -> None:
    """``GET /lineage/artifacts/{sha}/releases`` under a trace: release, aliases now, approvals."""
    if not found.get("releases"):
        tree.add("[dim]not released[/dim]")
        return
    for r in found["releases"]:
        node = tree.add(
            f"[bold]release {escape(r['ref'])}[/bold] ({r['status']}) by {escape(r['created_by'])}"
        )
        for a in r["aliases"]:
            approvers = (a.get("move") or {}).get("approvals") or []
            node.add(
                f"[bold]{escape(a['alias'])}[/bold] since {_when(a['since'])}"
                + (f", approved by {escape(', '.join(approvers))}" if approvers else "")
                + (" [bold red]OVERRIDE[/bold red]" if (a.get("move") or {}).get("override") else "")
            )
        for m in r["alias_events"]:
            node.add(move_line(m))
