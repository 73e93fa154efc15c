"""gw retention hold | lift | holds | expired, and the table of ``gw report storage`` (docs/retention.md)."""

from __future__ import annotations

import csv
import io
import json
from typing import Annotated, Literal

import typer
from rich.table import Table

from gateway.cli.common import JsonOpt, call
from gateway.cli.output import console, print_json

retention_app = typer.Typer(no_args_is_help=True, help="Retention: holds, and what expired of a run.")
Target = Literal["run", "model", "project"]


def register(app: typer.Typer) -> None:
    """Add ``gw retention`` to ``app``."""
    app.add_typer(retention_app, name="retention")


@retention_app.command("hold")
def hold(
    target_type: Annotated[Target, typer.Argument(help="run, model or project.")],
    target: Annotated[str, typer.Argument(help="A run id, a model as PROJECT/NAME, or a project name.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (required; audited).")],
    as_json: JsonOpt = False,
) -> None:
    """Hold a run, a model or a project: nothing under it is deleted until the hold is lifted (leads)."""
    placed = call("hold", target_type, target, reason)
    if as_json:
        print_json(placed)
        return
    console.print(f"{placed['id']}: {target_type} {target} held ({placed['reason']})", markup=False)


@retention_app.command("lift")
def lift(
    hold_id: Annotated[str, typer.Argument(help="The hold's id (hold-...).")],
    reason: Annotated[str, typer.Option("--reason", help="Why (required; audited).")],
    as_json: JsonOpt = False,
) -> None:
    """Lift a hold; the next sweep may delete what its policies allow."""
    lifted = call("lift_hold", hold_id, reason)
    if as_json:
        print_json(lifted)
        return
    console.print(f"{lifted['id']} lifted by {lifted['lifted_by']}", markup=False)


@retention_app.command("holds")
def holds(
    project: Annotated[str | None, typer.Option(help="Only this project's.")] = None,
    include_lifted: Annotated[bool, typer.Option("--all", help="Lifted holds too.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The holds of your projects."""
    found = call("holds", project, include_lifted)
    if as_json:
        print_json(found)
        return
    table = Table(show_edge=False, header_style="bold")
    for column in ("hold", "target", "project", "by", "since", "reason", "lifted"):
        table.add_column(column)
    for h in found:
        table.add_row(
            h["id"],
            f"{h['target_type']} {h['target_id']}",
            h["project"],
            h["created_by"],
            h["created_at"][:19],
            h["reason"],
            (h["lifted_at"] or "")[:19],
        )
    console.print(table)


@retention_app.command("expired")
def expired(run_id: Annotated[str, typer.Argument(help="A run id.")], as_json: JsonOpt = False) -> None:
    """What retention sweeps deleted of a run: path, size, digest, rule and when."""
    found = call("run_expired", run_id)
    if as_json:
        print_json(found)
        return
    if not found:
        console.print(f"nothing of run {run_id} has expired", markup=False)
        return
    for d in found:
        words = d["words"] or f"{d['state']}: {d['note'] or ''}"
        console.print(
            f"{d['rel_path']}  {d['size_bytes']} bytes  sha256 {d['sha256'] or '-'}  {words}", markup=False
        )


def storage_text(data: dict, fmt: str) -> str:
    """``GET /retention/storage``'s answer as a table, CSV or JSON text."""
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    header = ["key", "project", "size_bytes", "files", "runs", "freeable_bytes", "measured_at"]
    rows = [[r[k] if r[k] is not None else "" for k in header] for r in data["rows"]]
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
        return out.getvalue()
    lines = [f"storage by {data['by']}"]
    widths = [max(len(str(x)) for x in [h, *[r[i] for r in rows]]) for i, h in enumerate(header)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)) for r in rows]
    lines.append("")
    for p in data["projects"]:
        limit = f" of {p['limit_bytes']} limit" if p["limit_bytes"] else ""
        size = "not measured yet" if p["size_bytes"] is None else f"{p['size_bytes']} bytes{limit}"
        growth = "" if p["growth_bytes"] is None else f", growth {p['growth_bytes']:+d} bytes (30 days)"
        lines.append(
            f"{p['project']}: {size} [{p['status']}]{growth}, next sweep frees {p['freeable_bytes']} bytes"
        )
        if p["warning"]:
            lines.append(f"  warning: {p['warning']}")
    for d in data.get("departures") or []:
        whose = f", handed to {d['steward']}" if d["steward"] else ""
        lines.append(f"{d['user']} left {d['project']} on {d['left_at'][:10]}: {d['action']}{whose}")
    return "\n".join(lines) + "\n"
