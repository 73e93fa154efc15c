"""gw admin retention run [--dry-run]: one retention sweep on the gateway host (docs/retention.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from gateway.cli.common import JsonOpt, usage
from gateway.cli.output import console, print_json
from gateway.cli.server.admin_cmds import _operator, local_services

retention_admin = typer.Typer(no_args_is_help=True, help="Retention: the sweep of run files.")


def register_admin(admin: typer.Typer) -> None:
    """Add ``gw admin retention ...`` to ``admin``."""
    admin.add_typer(retention_admin, name="retention")


@retention_admin.command("run")
def run(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")
    ] = False,
    project: Annotated[str | None, typer.Option(help="Only this project's runs.")] = None,
    as_of: Annotated[
        str | None, typer.Option(help="With --dry-run: plan as if it were then (UTC, 2027-01-01).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """One sweep: each deletion the retention policies allow, measured, recorded, deleted as the files'
    owner and audited; a deletion a dead sweep left half done is finished or reported first."""
    if as_of is not None and not dry_run:
        usage("--as-of plans for another time: it goes with --dry-run only")
    when = None
    if as_of:
        from datetime import UTC, datetime

        try:
            when = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
        except ValueError:
            usage(f"--as-of {as_of!r} is not a time; give e.g. 2027-01-01 or 2027-01-01T12:00:00 (UTC)")
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
    with local_services(dry_run=dry_run) as services:
        report = services.retention.sweep(_operator(), dry_run=dry_run, project=project, as_of=when)
    if as_json:
        from dataclasses import asdict

        print_json(
            {
                "sweep_id": report.sweep_id,
                "at": report.at.isoformat(),
                "dry_run": report.dry_run,
                "freed_bytes": report.freed_bytes,
                "items": [asdict(i) for i in report.items],
                "kept": [asdict(k) for k in report.kept],
                "problems": report.problems,
            }
        )
        return
    for item in report.items:
        console.print(
            f"{item.outcome:12} {item.run_id} {item.path} ({item.kind}, {item.size_bytes} bytes) "
            f"rule {item.rule}{': ' + item.note if item.note else ''}",
            markup=False,
        )
    for kept in report.kept:
        console.print(f"kept         {kept.run_id}: {kept.reason}", markup=False)
    for problem in report.problems:
        console.print(f"problem      {problem}", markup=False)
    verb = "would free" if report.dry_run else "freed"
    console.print(
        f"{report.sweep_id} at {report.at.isoformat()}: {verb} {report.freed_bytes} bytes", markup=False
    )
