"""What ``gw model`` and ``gw release`` commands share: their arguments parsed (models, releases,
aliases, request ids) and their answers shown (``release_cmds``, ``release_alias_cmds``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import typer

from gateway.cli.common import usage
from gateway.cli.output import console, print_json
from gateway.core.releases.domain import ALIAS, ALIAS_HELP, ReleaseRef, parse_release_ref

REQUEST_ID = re.compile(r"pr-[0-9a-f]{16}")
AliasOpt = Annotated[str, typer.Option("--alias", help=f"The alias ({ALIAS_HELP}).")]
Reason = Annotated[str, typer.Option("--reason", help="Why (recorded with the event).")]


def release_ref(text: str, *, version: bool | None) -> ReleaseRef:
    """``PROJECT/NAME[@VERSION]`` parsed; a usage error (exit 2) saying what is wrong."""
    try:
        return parse_release_ref(text, version=version)
    except ValueError as exc:
        usage(str(exc))


def model_path(text: str) -> str:
    """The API path of model ``PROJECT/NAME``."""
    ref = release_ref(text, version=False)
    return f"/models/{ref.project}/{ref.name}"


def release_path(text: str) -> tuple[str, int]:
    """The model's API path and the release number of ``PROJECT/NAME@VERSION`` (latest refused)."""
    ref = release_ref(text, version=True)
    if ref.version is None:
        usage(f"{text!r}: name a release number (e.g. {ref.project}/{ref.name}@3), not latest")
    return f"/models/{ref.project}/{ref.name}", ref.version


def alias_arg(alias: str) -> str:
    """``alias`` if it is a valid alias name, else a usage error naming the rule."""
    if not ALIAS.fullmatch(alias):
        usage(f"alias {alias!r} is not valid: {ALIAS_HELP}")
    return alias


def show(found: Any, as_json: bool, lines: Callable[[Any], Iterable[str]]) -> None:
    """Print an answer as JSON, or as the lines ``lines`` makes of it."""
    if as_json:
        print_json(found)
        return
    for line in lines(found):
        console.print(line)
