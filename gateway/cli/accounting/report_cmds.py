"""gw report usage|cost|efficiency|storage: a report over the accounting records (or, storage, the
run directories' measured sizes: docs/retention.md), from the API.

The API renders every form (table, CSV, JSON, the HTML page with its
plots); gw prints it, or writes it to ``-o FILE``. An HTML report is always
written to a file: a page on a terminal helps nobody.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import typer

from gateway.cli.common import call, usage
from gateway.cli.output import console
from gateway.core.reports.periods import RELATIVE_HELP, resolve_period

Kind = Literal["usage", "cost", "efficiency", "storage"]
By = Literal["project", "user", "queue", "run", "release", "cluster"]
Format = Literal["table", "csv", "json", "html"]


def register(app: typer.Typer) -> None:
    """Add ``gw report`` to ``app``."""
    app.command("report")(report)


def report(
    kind: Annotated[Kind, typer.Argument(help="usage, cost, efficiency or storage.")],
    by: Annotated[
        By, typer.Option(help="One row per project, user, queue, run, release or Slurm cluster.")
    ] = "project",
    period: Annotated[
        str | None, typer.Option(help=f"{RELATIVE_HELP}. Days are UTC. Default: this month.")
    ] = None,
    project: Annotated[str | None, typer.Option(help="Only this project's records.")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="table, csv, json or html.")] = "table",
    out: Annotated[str | None, typer.Option("-o", "--output", help="Write it to this file.")] = None,
) -> None:
    """GPU-hours, CPU-hours, cost, waits, the share spent on failed attempts, GPU utilisation and idle
    GPU-hours, with the rate versions that priced them; storage: run-directory bytes per project, user
    or run, against the space limit, growth, and what the next sweep frees."""
    if kind == "storage":
        _storage(by, project, fmt, out, period)
        return
    if period is not None:
        try:
            period = resolve_period(period, today=datetime.now(UTC).date()).label
        except ValueError as exc:
            usage(f"--period: {exc}")
    if fmt == "html" and out is None:
        usage("an HTML report goes to a file: add -o FILE.html")
    data = call("report", kind, by=by, period=period, project=project, format=fmt)
    if out is not None:
        Path(out).write_bytes(data)
        console.print(f"wrote {out} ({len(data)} bytes)", markup=False)
        return
    sys.stdout.write(data.decode("utf-8"))
    sys.stdout.flush()


def _storage(by: str, project: str | None, fmt: str, out: str | None, period: str | None) -> None:
    from gateway.cli.retention.retention_cmds import storage_text

    if by not in ("project", "user", "run"):
        usage(f"--by {by}: a storage report is by project, user or run")
    if fmt == "html" or period is not None:
        usage("a storage report has no --period and no html form (the project page plots it)")
    text = storage_text(call("storage", by=by, project=project), fmt)
    if out is not None:
        Path(out).write_text(text, encoding="utf-8")
        console.print(f"wrote {out} ({len(text)} bytes)", markup=False)
        return
    sys.stdout.write(text)
    sys.stdout.flush()
