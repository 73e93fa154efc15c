"""gw admin accounting ingest: sacct for the whole cluster into the ledger, on the gateway host."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated

import typer

from gateway.cli.common import JsonOpt, usage
from gateway.cli.output import console, print_json
from gateway.cli.server.admin_cmds import _operator, local_services

accounting_admin = typer.Typer(no_args_is_help=True, help="Accounting: the cluster's sacct records.")


def register_admin(admin: typer.Typer) -> None:
    """Add ``gw admin accounting ...`` to ``admin``."""
    admin.add_typer(accounting_admin, name="accounting")


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
        print_json(asdict(counts))
        return
    console.print(
        f"read {counts.read}, new {counts.new}, updated {counts.updated}, linked {counts.linked}, "
        f"priced {counts.priced}",
        markup=False,
    )
    if len(counts.clusters) > 1 or any(c.error for c in counts.clusters):
        for c in counts.clusters:
            said = f"not read: {c.error}" if c.error else f"read {c.read}, new {c.new}, updated {c.updated}"
            console.print(f"  cluster {c.cluster}: {said}", markup=False)


def _utc(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        usage(f"--since {text!r} is not a time; give e.g. 2026-11-01 or 2026-11-01T12:00:00 (UTC)")
    return value if value.tzinfo else value.replace(tzinfo=UTC)
