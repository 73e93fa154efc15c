"""gw model ... and gw release ...: models, releases, aliases, protection policies, promotions, history.

Models and releases are here; the alias, policy, promotion and history commands are in
``release_alias_cmds`` (added to ``gw release`` below).

A model is ``PROJECT/NAME``, a release ``PROJECT/NAME@VERSION``. ``gw release
create`` takes the artifact as a sha256 or a local file (hashed here). A
refused move (exit 5) lists what its policy still misses.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from gateway.cli.common import SHA256_HEX, JsonOpt, call, usage
from gateway.cli.output import console, print_json
from gateway.cli.releases import release_view
from gateway.cli.releases.release_alias_cmds import add_release_commands, policy_text
from gateway.cli.releases.release_args import Reason, model_path, release_path, release_ref, show
from gateway.core import names

model_app = typer.Typer(no_args_is_help=True, help="Registered models of a project.")
release_app = typer.Typer(no_args_is_help=True, help="Releases, aliases, policies, promotions and history.")


def register(app: typer.Typer) -> None:
    """Add ``gw model`` and ``gw release`` to ``app``."""
    app.add_typer(model_app, name="model")
    app.add_typer(release_app, name="release")
    from gateway.cli.handoff import handoff_cmds  # gw release mirror-status (docs/handoff.md)

    handoff_cmds.add_release_commands(release_app)


# -- models -------------------------------------------------------------------------------------


@model_app.command("create")
def model_create(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    description: Annotated[str, typer.Option(help="What the model is.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Register a model in a project."""
    ref = release_ref(model, version=False)
    body = {"project": ref.project, "name": ref.name, "description": description}
    show(
        call("registry", "POST", "/models", body),
        as_json,
        lambda m: [f"registered model {m['ref']} ({m['id']})"],
    )


@model_app.command("list")
def model_list(
    project: Annotated[str | None, typer.Option(help="Only this project's models.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Models of your projects."""
    if project is not None and not names.NAME.fullmatch(project):
        usage(f"project {project!r} is not valid; use {names.NAME_HELP}")
    found = call("registry", "GET", "/models", params={"project": project})
    show(found, as_json, lambda ms: [f"{m['ref']}  {m['description']}" for m in ms] or ["no models"])


@model_app.command("show")
def model_show(model: Annotated[str, typer.Argument(help="PROJECT/NAME")], as_json: JsonOpt = False) -> None:
    """A model: its releases, where its aliases point, its policies."""
    path = model_path(model)
    found = {
        "model": call("registry", "GET", path),
        "releases": call("registry", "GET", f"{path}/releases"),
        "aliases": call("registry", "GET", f"{path}/aliases"),
        "policies": call("registry", "GET", f"{path}/policies"),
    }
    if as_json:
        print_json(found)
        return
    console.print(f"[bold]{found['model']['ref']}[/bold]  {found['model']['description']}")
    console.print(release_view.releases_table(found["releases"]))
    for a in found["aliases"]:
        console.print(f"{a['alias']} -> v{a['version'] or '-'} since {a['since']}")
    for p in found["policies"]:
        console.print(f"policy {p['alias']} ({p['scope']}): {policy_text(p)}", markup=False)


# -- releases -----------------------------------------------------------------------------------


@release_app.command("create")
def release_create(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    artifact: Annotated[str, typer.Option("--artifact", help="The artifact: its sha256, or a file here.")],
    run: Annotated[str | None, typer.Option(help="The run that wrote it (when several did).")] = None,
    notes: Annotated[str, typer.Option(help="Why this release.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create the model's next release of an artifact of a succeeded run."""
    path = model_path(model)
    if os.path.isfile(artifact):
        from gateway.adapters.files import sha256_file

        sha = sha256_file(artifact)[0]
    elif SHA256_HEX.fullmatch(artifact):
        sha = artifact.lower()
    else:
        usage(f"--artifact {artifact!r} is neither a file here nor a sha256 (64 hex digits)")
    body = {"artifact_sha256": sha, "run_id": run, "notes": notes}
    show(
        call("registry", "POST", f"{path}/releases", body), as_json, lambda r: [f"created release {r['ref']}"]
    )


@release_app.command("list")
def release_list(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")], as_json: JsonOpt = False
) -> None:
    """Every release of a model."""
    found = call("registry", "GET", f"{model_path(model)}/releases")
    if as_json:
        print_json(found)
    else:
        console.print(release_view.releases_table(found))


@release_app.command("show")
def release_show(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")], as_json: JsonOpt = False
) -> None:
    """One release: artifact, run, status events, alias moves (with --json also its evidence snapshot)."""
    path, version = release_path(release)
    show(call("registry", "GET", f"{path}/releases/{version}"), as_json, release_view.release_lines)


def _status(release: str, status: str, reason: str, as_json: bool) -> None:
    path, version = release_path(release)
    if not reason.strip():
        usage("--reason is required: say why")
    found = call(
        "registry", "POST", f"{path}/releases/{version}/status", {"status": status, "reason": reason}
    )
    show(found, as_json, lambda r: [f"{r['ref']} is {r['status']}"])


def _status_command(name: str, status: str, doc: str) -> None:
    """Add ``gw release NAME RELEASE --reason TEXT``, which moves the release to ``status``; ``doc`` is
    its help."""

    def command(
        release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
        reason: Reason = "",
        as_json: JsonOpt = False,
    ) -> None:
        _status(release, status, reason, as_json)

    command.__doc__ = doc
    release_app.command(name)(command)


_status_command("deprecate", "deprecated", "Mark a release deprecated (an event with a reason; leads).")
_status_command(
    "withdraw",
    "withdrawn",
    "Withdraw a release: it can no longer be promoted (an event with a reason; leads).",
)
_status_command(
    "reactivate",
    "active",
    "Mark a deprecated or withdrawn release active again (an event with a reason; leads).",
)

add_release_commands(release_app)  # after the commands above, so that gw release --help keeps their order
