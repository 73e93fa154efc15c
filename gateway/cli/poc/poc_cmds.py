"""``gw poc run``: the five acceptance scenarios against the gateway gw talks to (gateway/poc/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gateway.cli.common import client_settings, usage
from gateway.errors import SpecError

# A site apply with its Slurm sync (sacctmgr), or a bundle, may take longer than a plain request.
POC_TIMEOUT_S = 180.0

poc_app = typer.Typer(no_args_is_help=True, help="The acceptance scenarios as one command (docs/poc.md).")


def register(app: typer.Typer) -> None:
    """Add ``gw poc`` to ``app``."""
    app.add_typer(poc_app, name="poc")


@poc_app.command("run")
def run(
    site: Annotated[
        Path | None, typer.Option(help="The POC site file (docs/poc.md); default: project demo.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Where the evidence and the summary go.")] = Path("var/poc"),
    only: Annotated[
        str | None, typer.Option(help="Only these scenarios, e.g. 1,4,5 (4 and 5 need 1).")
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the POC's project at the end.")] = False,
) -> None:
    """Run the five scenarios as a new user would, through the API; exit 0 only when every one passes."""
    from gateway.client.api import GatewayClient
    from gateway.poc.runner import run_poc
    from gateway.poc.site import load_site

    try:
        loaded = load_site(site)
    except SpecError as exc:
        usage(str(exc))
    except OSError as exc:
        usage(f"--site: {exc}")
    if keep:
        loaded = loaded.model_copy(update={"keep": True})
    chosen = None
    if only:
        try:
            chosen = {int(n) for n in only.split(",")}
        except ValueError:
            usage(f"--only: {only!r} is not a list of scenario numbers such as 1,4,5")
        if not chosen <= {1, 2, 3, 4, 5}:
            usage(f"--only: scenarios are 1 to 5, not {sorted(chosen - {1, 2, 3, 4, 5})}")
    settings = client_settings()
    settings = settings.with_timeout(max(settings.timeout_s, POC_TIMEOUT_S))
    data = run_poc(
        GatewayClient(settings), loaded, out.resolve(), only=chosen, echo=lambda line: typer.echo(line)
    )
    raise typer.Exit(0 if data["passed"] else 1)
