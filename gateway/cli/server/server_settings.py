"""The server's settings for ``gw serve`` and ``gw admin``: read once, every problem a clear exit.

Both read the same place (``gateway.settings``: ``GATEWAY_*`` variables over the settings file
``make up`` writes), so an operator's ``gw admin`` acts on the database the server uses. An admin
command never creates that database: a SQLite file that is not there is named, with where its
URL came from, instead of an empty database being made and then found wanting.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import typer

from gateway.cli import exits
from gateway.cli.output import err_console

if TYPE_CHECKING:
    from gateway.settings import Settings


def load_settings() -> Settings:
    """``Settings()``, or exit 2 naming what is wrong (the variable or the file, never a value)."""
    from pydantic import ValidationError

    from gateway.settings import Settings, SettingsFileError, settings_problems

    try:
        return Settings()
    except SettingsFileError as exc:
        err_console.print(f"error: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(exits.USAGE) from exc
    except ValidationError as exc:  # which setting and why, never its value (it may be a secret)
        err_console.print(f"invalid gateway settings{_from_file()}:", markup=False)
        err_console.print(settings_problems(exc), markup=False)
        raise typer.Exit(exits.USAGE) from exc


def where_from(variable: str) -> str:
    """Where ``variable``'s value came from: the environment, the settings file, or the default."""
    from gateway.settings import settings_file

    if variable in os.environ:
        return "from the environment"
    path = settings_file()
    if path is not None and any(
        line.split("=", 1)[0].strip().removeprefix("export ").strip() == variable
        for line in path.read_text(encoding="utf-8").splitlines()
    ):
        return f"from {path}"
    return "the default: neither the environment nor a settings file sets it"


def require_database(settings: Settings) -> None:
    """Exit 69 when the SQLite database file the settings name does not exist (nothing is created)."""
    path = settings.sqlite_file
    if path is None or path.exists():
        return
    err_console.print(
        f"error: there is no gateway database at {path} "
        f"(GATEWAY_DATABASE_URL {where_from('GATEWAY_DATABASE_URL')}); "
        "nothing was created. Point GATEWAY_DATABASE_URL (or the settings file, GATEWAY_SETTINGS_FILE) at "
        "the server's database, or create this one with `gw admin db upgrade` (make up does both)",
        markup=False,
        soft_wrap=True,
    )
    raise typer.Exit(exits.UNAVAILABLE)


def _from_file() -> str:
    from gateway.settings import SettingsFileError, settings_file

    try:
        path = settings_file()
    except SettingsFileError:
        return ""
    return f" (environment and {path})" if path else ""
