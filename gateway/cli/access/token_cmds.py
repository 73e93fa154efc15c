"""gw token issue | list | revoke: the caller's API tokens (through the API)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gateway.cli.common import JsonOpt, call
from gateway.cli.output import console, err_console, print_json

token_app = typer.Typer(no_args_is_help=True, help="Your API tokens.")


def register(app: typer.Typer) -> None:
    """Add ``gw token`` to ``app``."""
    app.add_typer(token_app, name="token")


@token_app.command("issue")
def token_issue(
    name: Annotated[str, typer.Option(help="A name to recognise it by.")] = "default",
    user: Annotated[str | None, typer.Option(help="For another user (admins only).")] = None,
    expires_days: Annotated[float | None, typer.Option(help="Days until it expires (0: never).")] = 90,
) -> None:
    """Issue a token; the secret is printed once."""
    issued = call("issue_token", user=user, name=name, expires_in_days=expires_days if expires_days else None)
    console.print(issued["token"], markup=False)
    err_console.print(
        f"token {issued['prefix']}... for {issued['user']}, expires {issued['expires_at'] or 'never'}"
    )


@token_app.command("list")
def token_list(
    user: Annotated[str | None, typer.Option(help="Another user's (admins only).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Your tokens (never their secrets)."""
    tokens = call("tokens", user)
    if as_json:
        print_json(tokens)
        return
    table = Table(show_edge=False, header_style="bold")
    for column in ("ID", "NAME", "PREFIX", "CREATED", "EXPIRES", "REVOKED", "LAST USED"):
        table.add_column(column)
    for t in tokens:
        table.add_row(
            str(t["id"]),
            t["name"],
            t["prefix"],
            *(str(t[k] or "-")[:16] for k in ("created_at", "expires_at", "revoked_at", "last_used_at")),
        )
    console.print(table)


@token_app.command("revoke")
def token_revoke(token_id: Annotated[int, typer.Argument(help="Token id (gw token list).")]) -> None:
    """Revoke a token; it stops working at once."""
    token = call("revoke_token", token_id)
    console.print(f"token {token['id']} ({token['prefix']}...) revoked")
