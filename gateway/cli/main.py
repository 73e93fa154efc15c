"""gw: submit, watch and cancel runs through the gateway API; `gw serve` runs the gateway.

Exit status (``gateway.cli.exits``): 0 ok, 2 bad input, 4 not found, 5 conflict,
69 server/Slurm/database unavailable; ``gw wait``: 0 succeeded, 1 failed,
3 cancelled, 124 timed out; ``gw eval gate``: 0 pass, 1 fail, 3 not comparable.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gateway.cli import common, exits
from gateway.cli.common import JsonOpt
from gateway.cli.lazy import Lazy, LazyGroup
from gateway.cli.output import (
    console,
    err_console,
    health_headline,
    health_lines,
    print_json,
    print_tsv,
    run_columns,
    run_row,
    runs_table,
    show_run,
    state_text,
)
from gateway.cli.runs.waiting import TERMINAL, wait_for
from gateway.client.errors import ApiError
from gateway.errors import SpecError


def _in(module: str, help: str, *, group: bool = False, hook: str = "register") -> Lazy:
    return Lazy(f"gateway.cli.{module}", help, group=group, hook=hook)


def _admin(module: str, help: str, *, group: bool = False) -> Lazy:
    return _in(module, help, group=group, hook="register_admin")


class Gw(LazyGroup):
    """``gw``: the run commands of this module, then the other modules' (imported when used)."""

    lazy = {
        "serve": _in(
            "server.serve_cmds",
            "Run the gateway: the REST API, the web pages (/ui) and the periodic Slurm refresh.",
        ),
        "quota": _in(
            "accounting.usage_cmds", "Usage against the caps: GPUs now, GPU-hours this month, jobs in queue."
        ),
        "queue": _in(
            "accounting.usage_cmds",
            "The admin's view: per partition nodes, running and pending jobs; per project usage.",
        ),
        "audit": _in("accounting.usage_cmds", "The audit log (admins: everything; leads: their projects)."),
        "sbatch": _in(
            "runs.sbatch_cmd",
            "sbatch, through the gateway: gw sbatch [OPTIONS] [SCRIPT [ARGS]], reading #SBATCH lines too.",
        ),
        "cost": _in(
            "accounting.accounting_cmds",
            "A run's cost: each accounting record of its attempts (a Slurm requeue is one), and the totals.",
        ),
        "trace": _in(
            "lineage.data_cmds",
            "Where a file, run, eval result or dataset version came from, and what was made from it"
            " (for a file:\ndown to its releases and the aliases that point at them).",
        ),
        "compare": _in(
            "lineage.data_cmds",
            "Two runs side by side: params that differ, dataset versions, metrics, code and environment.",
        ),
        "evidence": _in(
            "evidence.evidence_cmds",
            "Export the evidence bundle of a run, release or file (evidence.json, index.html, manifest.json),"
            "\nor check one: `gw evidence verify BUNDLE [--public-key KEY]`.",
        ),
        "report": _in(
            "accounting.report_cmds",
            "GPU-hours, CPU-hours, cost, waits, the share spent on failed attempts, GPU utilisation and idle"
            "\nGPU-hours, with the rate versions that priced them; storage: run-directory bytes per project,"
            " user"
            "\nor run, against the space limit, growth, and what the next sweep frees.",
        ),
        "telemetry": _in(
            "accounting.telemetry_cmds",
            "Each attempt's GPUs: utilisation, peak memory, energy, idle fraction, idle GPU-hours.",
        ),
        "tasks": _in(
            "runs.task_cmds",
            "A sweep's tasks, one a line: index, state, exit, elapsed, node, its sweep point, final metrics.",
        ),
        "token": _in("access.token_cmds", "Your API tokens.", group=True),
        "retention": _in(
            "retention.retention_cmds", "Retention: holds, and what expired of a run.", group=True
        ),
        "dataset": _in("lineage.data_cmds", "Datasets: versions registered by content.", group=True),
        "env": _in(
            "envs.env_cmds",
            "Training environments: locked venvs, images and module lists, versioned.",
            group=True,
        ),
        "eval": _in("eval.eval_cmds", "Evaluation: suites, eval runs, results, gates, reviews.", group=True),
        "model": _in("releases.release_cmds", "Registered models of a project.", group=True),
        "release": _in(
            "releases.release_cmds", "Releases, aliases, policies, promotions and history.", group=True
        ),
        "handoff": _in("handoff.handoff_cmds", "MLflow mirror jobs and webhook deliveries.", group=True),
        "poc": _in("poc.poc_cmds", "The acceptance scenarios as one command (docs/poc.md).", group=True),
    }


class Admin(LazyGroup):
    """``gw admin``: the operator commands, all in other modules (imported when used)."""

    lazy = {
        "apply": _admin(
            "server.admin_cmds",
            "Make the gateway (and Slurm's associations) match a site file; prints each change.",
        ),
        "export": _admin(
            "server.admin_cmds", "Write the current users, projects, members, queues and caps as a site file."
        ),
        "sync-slurm": _admin(
            "server.admin_cmds", "Push the projects' caps to Slurm accounts and associations (sacctmgr)."
        ),
        "token": _admin(
            "server.admin_cmds",
            "Issue a token for USER on the gateway host (bootstrap: no token needed);"
            " prints the secret once.",
        ),
        "ssh-check": _admin(
            "server.admin_cmds",
            "Log in to the submit host as the service user and as each mapped OS user; exit 69 if any fails.",
        ),
        "db": _admin("server.serve_cmds", "The gateway's database.", group=True),
        "audit": _admin("server.admin_cmds", "The audit log, on the gateway host.", group=True),
        "evidence-key": _admin(
            "server.admin_cmds", "The site key that signs evidence bundles (Ed25519).", group=True
        ),
        "accounting": _admin(
            "server.accounting_admin", "Accounting: the cluster's sacct records.", group=True
        ),
        "retention": _admin("server.retention_admin", "Retention: the sweep of run files.", group=True),
    }


app = typer.Typer(cls=Gw, no_args_is_help=True, add_completion=False, help=__doc__.split("\n\n")[0])
admin = typer.Typer(cls=Admin, no_args_is_help=True, help="Operator commands (run on the gateway host).")
app.add_typer(admin, name="admin")

# -- runs ------------------------------------------------------------------------


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


@app.command()
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


@app.command()
def runs(
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    state: Annotated[str | None, typer.Option(help="Only runs in this state.")] = None,
    submitter: Annotated[str | None, typer.Option(help="Only runs of this user.")] = None,
    tag: Annotated[str | None, typer.Option(help="Only runs with this tag.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Only runs created at or after this time (ISO 8601, UTC if no offset).")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Only runs created before this time (ISO 8601, UTC if no offset).")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    cursor: Annotated[
        str | None, typer.Option(help="Next page: the cursor the previous page printed.")
    ] = None,
    cluster: Annotated[
        str | None, typer.Option(help="Only runs with a job on this Slurm cluster (docs/clusters.md).")
    ] = None,
    as_json: JsonOpt = False,
    fmt: Annotated[
        Literal["table", "tsv", "json"],
        typer.Option(
            "--format",
            help="table (whole values when not on a terminal), tsv (tab-separated, a header line) or json.",
        ),
    ] = "table",
) -> None:
    """List runs, newest first."""
    try:
        page = common.client().runs(
            project=project,
            state=state,
            submitter=submitter,
            tag=tag,
            since=since,
            until=until,
            cluster=cluster,
            limit=limit,
            cursor=cursor,
        )
    except ApiError as exc:
        common.fail(exc)
    if as_json or fmt == "json":
        print_json(page)
    elif fmt == "tsv":
        clustered = any(run.get("cluster") for run in page["items"])
        print_tsv(run_columns(clustered), [run_row(run, clustered=clustered) for run in page["items"]])
    elif page["items"]:
        console.print(runs_table(page["items"]))
        if page.get("next_cursor"):
            err_console.print(f"more: gw runs --cursor {page['next_cursor']}")
    else:
        console.print("no runs")


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="Run id.")],
    script: Annotated[bool, typer.Option("--script", help="Also print the rendered sbatch script.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """A run: spec, attempts with accounting, the timeline, code, environment, artifacts and metrics."""
    from gateway.cli.accounting import telemetry_cmds
    from gateway.cli.lineage.lineage_cmds import run_outputs
    from gateway.cli.lineage.lineage_view import provenance_lines

    client = common.client()
    try:
        run = client.run(run_id)
        outputs = run_outputs(client, run_id)
        gpu = telemetry_cmds.fetch(client, run_id)
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json({**run, "outputs": outputs, "telemetry": gpu})
        return
    show_run(run, script=script)
    console.print()
    for line in provenance_lines(run, outputs):
        console.print(line)
    for line in telemetry_cmds.show_lines(gpu):
        console.print(line, markup=False)


@app.command()
def cancel(run_id: Annotated[str, typer.Argument(help="Run id.")], as_json: JsonOpt = False) -> None:
    """Cancel a run's live attempt."""
    try:
        run = common.client().cancel(run_id)
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json(run)
    elif run["state"] in TERMINAL:
        console.print(f"run {run['id']} had already ended ({state_text(run['state'])}); nothing to cancel")
    else:
        console.print(f"run {run['id']}: cancel requested ({state_text(run['state'])})")


@app.command()
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


@app.command()
def logs(
    run_id: Annotated[str, typer.Argument(help="Run id.")],
    stderr: Annotated[bool, typer.Option("--stderr", help="Read stderr instead of stdout.")] = False,
    tail: Annotated[int, typer.Option(help="Lines from the end.")] = 200,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing until the run ends.")] = False,
    attempt: Annotated[int | None, typer.Option(help="Attempt number (default: latest).")] = None,
    task: Annotated[str | None, typer.Option(help="Array task index.")] = None,
    poll_s: Annotated[float, typer.Option(help="Seconds between reads with --follow.")] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    """Print the tail of a run's output; --follow keeps printing until the run ends."""
    client = common.client()
    stream = "stderr" if stderr else "stdout"
    try:
        chunk = client.logs(run_id, stream=stream, tail=tail, attempt=attempt, task=task)
        if as_json:
            print_json(chunk)
            return
        if chunk.get("array_tasks"):  # say which task this is, on stderr: stdout stays the log itself
            err_console.print(
                f"(array task {chunk['task']} of tasks {chunk['array_tasks']}; --task N for another)",
                markup=False,
            )
        _write(chunk["text"])
        if chunk.get("expired"):
            err_console.print(f"({chunk['path']}: {chunk['expired']})", markup=False)
        elif chunk.get("problem"):
            err_console.print(f"(cannot read {chunk['path']}: {chunk['problem']})", markup=False)
        elif not chunk["exists"] and not follow:
            err_console.print(f"(no output yet: {chunk['path']} does not exist)")
        offset_bytes = chunk["next_offset_bytes"]
        while follow:
            state = client.run(run_id)["state"]
            time.sleep(poll_s)
            chunk = client.logs(run_id, stream=stream, attempt=attempt, task=task, offset_bytes=offset_bytes)
            _write(chunk["text"])
            offset_bytes = chunk["next_offset_bytes"]
            if state in TERMINAL and not chunk["text"]:
                break
    except ApiError as exc:
        common.fail(exc)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@app.command()
def wait(
    run_id: Annotated[str, typer.Argument(help="Run id.")],
    timeout_s: Annotated[
        float | None, typer.Option("--timeout", help="Give up after this many seconds.")
    ] = None,
    poll_s: Annotated[float, typer.Option(help="Seconds between checks.")] = 2.0,
) -> None:
    """Wait for a run to end; exit 0 if it succeeded, 1 if it failed, 3 if cancelled, 124 on time-out."""
    raise typer.Exit(wait_for(common.client(), run_id, timeout_s=timeout_s, poll_s=poll_s, quiet=False))


@app.command()
def health(as_json: JsonOpt = False) -> None:
    """Is the gateway up, and can it reach its database and Slurm?"""
    client = common.client()
    try:
        report = client.health()
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json(report)
    else:
        console.print(health_headline(client.settings.url, report), markup=False, soft_wrap=True)
        for line in health_lines(report):
            console.print(line, markup=False)
    if report.get("status") != "ok":
        raise typer.Exit(exits.UNAVAILABLE)


if __name__ == "__main__":
    app()
