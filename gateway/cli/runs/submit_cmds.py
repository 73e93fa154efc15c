"""gw submit and gw rerun: run spec files (one, a batch, a directory) and reruns of a run with changes.

Registered on ``gw`` by ``gateway.cli.main`` (the run commands are no lazy entries).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from gateway.cli import common
from gateway.cli.common import JsonOpt
from gateway.cli.output import (
    console,
    err_console,
    print_json,
    state_text,
)
from gateway.cli.runs.waiting import wait_for
from gateway.client.errors import ApiError
from gateway.errors import SpecError


def _submitted(run: dict, as_json: bool, parsable: bool = False) -> None:
    for warning in run.get("warnings") or []:
        err_console.print(f"warning: {warning}", markup=False)
    if as_json:
        print_json(run)
    elif parsable:
        console.print(run.get("job_id") or "")
    elif run.get("job_id"):
        console.print(f"Submitted batch job {run['job_id']}")
        console.print(f"run {run['id']}  ({state_text(run['state'])})  watch: gw show {run['id']}")
    else:
        console.print(f"run {run['id']} is {state_text(run['state'])}: Slurm did not confirm the job yet")


SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def _spec_files(spec_files: list[Path], from_dir: Path | None) -> list[Path]:
    """The spec files given, then (``--from-dir``) every ``*.yaml``, ``*.yml`` and ``*.json`` in the
    directory, by name."""
    files = list(spec_files)
    if from_dir is not None:
        if not from_dir.is_dir():
            common.usage(f"--from-dir {from_dir}: not a directory")
        found = sorted(p for p in from_dir.iterdir() if p.suffix in SPEC_SUFFIXES and p.is_file())
        if not found:
            common.usage(f"--from-dir {from_dir}: no run spec files (*.yaml, *.yml, *.json) in it")
        files += found
    if not files:
        common.usage("give a run spec file (or several, or --from-dir DIR)")
    return files


def _spec_data(spec_file: Path) -> dict:
    """A spec file as the API takes it: every default filled, ``workdir`` the current directory when
    it has none, with the provenance of the code there."""
    from gateway.adapters.files import load_spec_file
    from gateway.cli.lineage.lineage_cmds import add_provenance

    try:
        spec = load_spec_file(spec_file)
    except SpecError as exc:
        common.spec_error(exc)
    data = spec.model_dump(mode="json", exclude_defaults=False)
    if data.get("workdir") is None:
        data["workdir"] = os.getcwd()
    add_provenance(data, data["workdir"])
    return data


def submit(
    spec_files: Annotated[
        list[Path] | None, typer.Argument(help="Run spec files (YAML or JSON); several go as one batch.")
    ] = None,
    from_dir: Annotated[
        Path | None,
        typer.Option("--from-dir", help="Also every *.yaml, *.yml and *.json in this directory, by name."),
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial", help="A batch: submit the specs that pass even when others are refused (else none)."
        ),
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the run (every run) to end.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Submit a run spec, or several as one batch (one request, all or none unless --partial).
    A spec without `workdir` runs in the current directory."""
    files = _spec_files(spec_files or [], from_dir)
    specs = [_spec_data(f) for f in files]
    client = common.client()
    if len(specs) == 1 and from_dir is None:
        try:
            run = client.submit(specs[0])
        except ApiError as exc:
            common.fail(exc)
        _submitted(run, as_json)
        if wait:
            raise typer.Exit(wait_for(client, run["id"], timeout_s=None, poll_s=2.0, quiet=as_json))
        return
    from gateway.cli.runs.batch_view import batch_refused, show_batch

    names = [str(f) for f in files]
    try:
        answer = client.submit_batch([{"spec": s} for s in specs], partial=partial)
    except ApiError as exc:
        batch_refused(exc, names)
    code = show_batch(answer, names, as_json=as_json)
    if wait:
        for item in answer["items"]:
            if item.get("run") and item["run"].get("job_id"):
                ended = wait_for(client, item["run"]["id"], timeout_s=None, poll_s=2.0, quiet=True)
                code = code or ended
    raise typer.Exit(code)


def rerun(
    run_id: Annotated[str, typer.Argument(help="The run to derive from (it keeps its evidence).")],
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="KEY.PATH=VALUE change to its spec; repeat for more.")
    ] = None,
    spec_file: Annotated[
        Path | None, typer.Option("--spec", help="A whole new spec instead of --set.")
    ] = None,
    as_me: Annotated[
        bool,
        typer.Option(
            "--as-me",
            help="Run another person's run under your own OS user (shows its command and asks first). "
            "Without it, a rerun of someone else's run runs as its owner (leads only).",
        ),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --as-me: do not ask (the command is still shown).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fix and rerun: a new run from RUN's spec with changes, linked both ways.

    Your own run reruns as you. Someone else's runs as its owner (their OS user; you are recorded
    as the one who asked), or with --as-me under your identity."""
    body: dict[str, Any] = {"set": list(set_ or [])}
    if spec_file is not None:
        from gateway.adapters.files import load_spec_file

        try:
            body["spec"] = load_spec_file(spec_file).model_dump(mode="json")
        except SpecError as exc:
            common.spec_error(exc)
    client = common.client()
    if as_me:
        _confirm_as_me(client, run_id, body, yes)
        body["as_me"] = True
    try:
        run = client.rerun(run_id, body)
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json(run)
        return
    _submitted(run, False)
    if run.get("requested_by"):
        console.print(
            f"  runs as its owner {run['submitter']} (OS user {run.get('os_user')}); "
            f"requested by {run['requested_by']}",
            markup=False,
        )
    for change in run.get("derived_diff") or []:
        console.print(
            f"  changed {change['path']}: {change['before']!r} -> {change['after']!r}", markup=False
        )


def _confirm_as_me(client: Any, run_id: str, body: dict[str, Any], yes: bool) -> None:
    """Show what an "as me" rerun of ``run_id`` runs under the caller's OS user; ask unless ``yes``."""
    from gateway.core.runs.rerun import command_text
    from gateway.core.spec.run_spec import build_spec

    try:
        parent = client.run(run_id)
    except ApiError as exc:
        common.fail(exc)
    spec = build_spec(body["spec"]) if body.get("spec") else build_spec(parent["spec"])
    console.print(
        f"run {run_id} is {parent['submitter']}'s; --as-me runs this under your own OS user:", markup=False
    )
    console.print(command_text(spec), markup=False, highlight=False)
    if body.get("set"):
        console.print(f"with changes: {', '.join(body['set'])}", markup=False)
    if not yes and not typer.confirm("Run it as you?", default=False):
        console.print("not rerun", markup=False)
        raise typer.Exit(1)
