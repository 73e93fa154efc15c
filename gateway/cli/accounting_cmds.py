"""gw cost RUN (a run's cost, over the API) and gw admin accounting ingest (on the gateway host)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.table import Table

from gateway.cli.common import JsonOpt, call, usage
from gateway.cli.output import console, print_json
from gateway.cli.server.admin_cmds import _operator, local_services

accounting_admin = typer.Typer(no_args_is_help=True, help="Accounting: the cluster's sacct records.")


def register(app: typer.Typer) -> None:
    """Add ``gw cost`` to ``app``."""
    app.command("cost")(cost)


def register_admin(admin: typer.Typer) -> None:
    """Add ``gw admin accounting ...`` to ``admin``."""
    admin.add_typer(accounting_admin, name="accounting")


def cost(run_id: Annotated[str, typer.Argument(help="Run id.")], as_json: JsonOpt = False) -> None:
    """A run's cost: each accounting record of its attempts (a Slurm requeue is one), and the totals."""
    body = call("run_cost", run_id)
    if as_json:
        print_json(body)
        return
    table = Table(show_edge=False, header_style="bold")
    for column in ("ATTEMPT", "JOB", "STATE", "ELAPSED S", "GPU-H", "CPU-H", "COST", "RATE VERSION"):
        table.add_column(column)
    for a in body["attempts"]:
        table.add_row(
            "-" if a["attempt"] is None else str(a["attempt"]),
            a["job_id"],
            a["state"] + (" (failed)" if a["failed"] else ""),
            str(a["elapsed_s"]),
            f"{a['gpu_hours']:.3f}",
            f"{a['cpu_hours']:.3f}",
            "-" if a["cost"] is None else f"{a['cost']:.4f}",
            "-" if a["rate_version"] is None else str(a["rate_version"]),
        )
    console.print(table)
    currency = body["currency"] or ""
    share = f" ({body['failed_total'] / body['total']:.0%})" if body["total"] else ""
    console.print(
        f"total {body['total']:.4f} {currency}; spent on attempts that failed: "
        f"{body['failed_total']:.4f}{share}",
        markup=False,
    )
    console.print(body["note"], markup=False)


@accounting_admin.command("ingest")
def ingest(
    since: Annotated[
        str | None,
        typer.Option(
            help="Read from this UTC time (2026-11-01 or 2026-11-01T12:00:00); default: where "
            "the last ingest left off, less the overlap."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Read sacct for the whole cluster into the accounting ledger (idempotent); print the counts."""
    start = _utc(since) if since else None
    with local_services() as services:
        counts = services.accounting.ingest_as(_operator(), start)
    if as_json:
        print_json(counts.__dict__)
        return
    console.print(
        f"read {counts.read}, new {counts.new}, updated {counts.updated}, linked {counts.linked}, "
        f"priced {counts.priced}",
        markup=False,
    )


def _utc(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        usage(f"--since {text!r} is not a time; give e.g. 2026-11-01 or 2026-11-01T12:00:00 (UTC)")
    return value if value.tzinfo else value.replace(tzinfo=UTC)
