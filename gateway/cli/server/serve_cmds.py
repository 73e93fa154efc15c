"""``gw serve`` (the gateway: API, web pages, periodic work) and ``gw admin db upgrade``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from gateway.cli import exits
from gateway.cli.output import console, err_console
from gateway.errors import GatewayError, SpecError

db_app = typer.Typer(no_args_is_help=True, help="The gateway's database.")


def register(app: typer.Typer) -> None:
    """Add ``gw serve`` to ``app``."""
    app.command()(serve)


def register_admin(admin: typer.Typer) -> None:
    """Add ``gw admin db`` to ``admin``."""
    admin.add_typer(db_app, name="db")


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    workers: Annotated[
        int,
        typer.Option(min=1, max=64, help="Server processes (uvicorn workers); more than 1 needs PostgreSQL."),
    ] = 1,
) -> None:
    """Run the gateway: the REST API, the web pages (/ui) and the periodic Slurm refresh."""
    import logging

    import uvicorn

    from gateway.adapters.evidence_key import load_signer
    from gateway.cli.server import serve_app
    from gateway.cli.server.server_settings import load_settings
    from gateway.settings import settings_file
    from gateway.wiring import upgrade_database

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    logging.getLogger("gateway.serve").info(
        "settings: the environment%s; database %s",
        f" over {settings_file()}" if settings_file() else " (no settings file)",
        settings.sqlite_file or "on PostgreSQL",
    )
    problem = serve_app.workers_problem(settings.database_url, workers)
    if problem is not None:
        err_console.print(f"[red]error[/red]: {escape(problem)}")
        raise typer.Exit(exits.USAGE)
    try:  # the evidence signing key, checked before serving: a bad one is a bad setting
        load_signer(settings.evidence_signing_key)
    except SpecError as exc:
        err_console.print("[red]invalid gateway settings[/red]:")
        err_console.print(
            "\n".join(f"  - {i.path} (GATEWAY_{i.path.upper()}): {i.message}" for i in exc.issues),
            markup=False,
        )
        raise typer.Exit(exits.USAGE) from exc
    try:
        upgrade_database(settings)  # once, here: the workers build their services without it
    except GatewayError as exc:
        err_console.print(f"[red]error[/red]: {escape(str(exc))}")
        raise typer.Exit(exits.UNAVAILABLE) from exc
    serve_app.share_web_key(workers, configured=settings.web_session_key is not None)
    # proxy_headers=False: the client address stays the TCP peer's. uvicorn would otherwise take it from
    # X-Forwarded-For sent through 127.0.0.1, letting a local user pass for a trusted proxy.
    uvicorn.run(
        "gateway.cli.server.serve_app:serve_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        log_config=serve_app.log_config(log_level),
        proxy_headers=False,
    )


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create the gateway database or bring its schema to the newest version (idempotent)."""
    from gateway.cli.server.server_settings import load_settings, where_from
    from gateway.wiring import upgrade_database

    settings = load_settings()
    try:
        dialect = upgrade_database(settings)
    except GatewayError as exc:
        err_console.print(f"[red]error[/red]: {escape(str(exc))}")
        raise typer.Exit(exits.UNAVAILABLE) from exc
    where = settings.sqlite_file or "PostgreSQL"
    console.print(
        f"database schema is up to date ({dialect}: {where}, GATEWAY_DATABASE_URL "
        f"{where_from('GATEWAY_DATABASE_URL')})",
        markup=False,
        soft_wrap=True,
    )
