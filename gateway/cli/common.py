"""What every ``gw`` command module shares: the API client, error reporting, and common options.

``client()`` builds the HTTP client from the client settings; ``fail`` reports
an API error and ends ``gw`` with its exit status (``gateway.cli.exits``);
``call`` does both around one client method; ``usage`` ends with a usage
error (exit 2) for bad input caught before any request.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.markup import escape

from gateway.cli import exits
from gateway.cli.output import err_console
from gateway.client.errors import ApiError
from gateway.errors import SpecError

if TYPE_CHECKING:  # the client and the settings load when a command first talks to the API, not for --help
    from gateway.client.api import GatewayClient
    from gateway.client.settings import ClientSettings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")


def client_settings() -> ClientSettings:
    """gw's settings, from GW_* or ~/.config/gw/config.toml; one that cannot be used ends gw (exit 2)."""
    from gateway.client.settings import ClientSettings, ClientSettingsError

    try:
        return ClientSettings.load()
    except ClientSettingsError as exc:
        usage(f"gw's settings: {exc}")


def client() -> GatewayClient:
    """The API client, from GW_URL / GW_TOKEN or ~/.config/gw/config.toml."""
    from gateway.client.api import GatewayClient

    return GatewayClient(client_settings())


def fail(exc: ApiError) -> NoReturn:
    """Print an API error (each field issue on its own line) and exit with its status's code."""
    if isinstance(exc.detail, list):
        err_console.print(f"[red]error[/red] ({exc.kind}):")
        for issue in exc.detail:
            where = ".".join(str(p) for p in issue.get("loc", [])[1:]) or "(request)"
            shown = f" (got {issue['input']!r})" if issue.get("input") is not None else ""
            err_console.print(f"  - {where}: {issue.get('msg')}{shown}", markup=False)
    else:
        err_console.print(f"[red]error[/red] ({escape(exc.kind)}): {escape(str(exc.detail))}")
    if exc.run_id:
        err_console.print(f"run {exc.run_id} is on record; see `gw show {exc.run_id}`")
    if exc.status == 401:
        err_console.print(unauthorized_hint(), markup=False, soft_wrap=True)
    raise typer.Exit(exits.for_status(exc.status))


def unauthorized_hint() -> str:
    """What to do about a refused token: where gw's came from, and how a first one is had."""
    from gateway.client.settings import token_origin

    return (
        f"{token_origin()}. A token comes from an admin: on the gateway host, "
        "`gw admin token USER --write-config ~/.config/gw/config.toml` (make up does it for admin); "
        "with a working one, `gw token issue` makes more"
    )


def call(method: str, *args: Any, **kwargs: Any) -> Any:
    """``GatewayClient.<method>(...)`` on a fresh client; an API error ends gw through ``fail``."""
    try:
        return getattr(client(), method)(*args, **kwargs)
    except ApiError as exc:
        fail(exc)


def usage(message: str) -> NoReturn:
    """Bad input found before any request: say so and exit 2."""
    err_console.print(message, markup=False)
    raise typer.Exit(exits.USAGE)


def spec_error(exc: SpecError) -> NoReturn:
    """A spec (or option) that does not validate: every issue, then exit 2."""
    usage(str(exc))
