"""gw cost RUN: a run's cost, over the API (gw admin accounting ingest: cli/server/accounting_admin.py)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gateway.cli.common import JsonOpt, call
from gateway.cli.output import console, print_json


def register(app: typer.Typer) -> None:
    """Add ``gw cost`` to ``app``."""
    app.command("cost")(cost)


def cost(run_id: Annotated[str, typer.Argument(help="Run id.")], as_json: JsonOpt = False) -> None:
    """A run's cost: each accounting record of its attempts (a Slurm requeue is one), and the totals.

    Each record shows its cluster and the rates that priced it (a cluster's own rate is named
    ``CLUSTER:partition/...``)."""
    body = call("run_cost", run_id)
    if as_json:
        print_json(body)
        return
    table = Table(show_edge=False, header_style="bold")
    columns = ("ATTEMPT", "JOB", "STATE", "ELAPSED S", "GPU-H", "CPU-H", "COST", "RATE VERSION")
    for column in (*columns, "CLUSTER", "RATES"):
        table.add_column(column)
    for a in body["attempts"]:
        table.add_row(
            "-" if a["attempt"] is None else str(a["attempt"]),
            a["job_id"],
            a["state"] + (" (failed)" if a["failed"] else " (cancelled)" if a.get("cancelled") else ""),
            str(a["elapsed_s"]),
            f"{a['gpu_hours']:.3f}",
            f"{a['cpu_hours']:.3f}",
            "-" if a["cost"] is None else f"{a['cost']:.4f}",
            "-" if a["rate_version"] is None else str(a["rate_version"]),
            a.get("cluster") or "-",
            ", ".join(a.get("rates") or []) or "-",
        )
    console.print(table)
    currency = body["currency"] or ""
    share = f" ({body['failed_total'] / body['total']:.0%})" if body["total"] else ""
    cancelled = body.get("cancelled_total") or 0.0
    kept = f" ({cancelled / body['total']:.0%})" if body["total"] else ""
    console.print(
        f"total {body['total']:.4f} {currency}; spent on attempts that failed: "
        f"{body['failed_total']:.4f}{share}; on cancelled ones: {cancelled:.4f}{kept}",
        markup=False,
    )
    console.print(body["note"], markup=False)
