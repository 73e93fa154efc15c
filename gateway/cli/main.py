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
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gateway.cli import (
    accounting_cmds,
    admin_cmds,
    common,
    data_cmds,
    eval_cmds,
    evidence_cmds,
    exits,
    lineage_cmds,
    poc_cmds,
    release_cmds,
    report_cmds,
    sbatch_cmd,
    serve_cmds,
    telemetry_cmds,
    token_cmds,
    usage_cmds,
)
from gateway.cli.api_error import ApiError
from gateway.cli.common import JsonOpt
from gateway.cli.lineage_view import provenance_lines
from gateway.cli.output import (
    console,
    err_console,
    health_lines,
    print_json,
    runs_table,
    show_run,
    state_text,
)
from gateway.errors import SpecError

if TYPE_CHECKING:
    from gateway.cli.client import GatewayClient

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__.split("\n\n")[0])
admin = typer.Typer(no_args_is_help=True, help="Operator commands (run on the gateway host).")
app.add_typer(admin, name="admin")

TERMINAL = {
    "succeeded",
    "failed",
    "cancelled",
    "timed_out",
    "out_of_memory",
    "node_failed",
    "preempted",
    "never_submitted",
}
# -- runs ------------------------------------------------------------------------


def _submitted(run: dict, as_json: bool, parsable: bool = False) -> None:
    if as_json:
        print_json(run)
    elif parsable:
        console.print(run.get("job_id") or "")
    elif run.get("job_id"):
        console.print(f"Submitted batch job {run['job_id']}")
        console.print(f"run {run['id']}  ({state_text(run['state'])})  watch: gw show {run['id']}")
    else:
        console.print(f"run {run['id']} is {state_text(run['state'])}: Slurm did not confirm the job yet")


@app.command()
def submit(
    spec_file: Annotated[Path, typer.Argument(help="Run spec (YAML or JSON).")],
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the run to end.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Submit a run spec. A spec without `workdir` runs in the current directory."""
    from gateway.adapters.files import load_spec_file

    try:
        spec = load_spec_file(spec_file)
    except SpecError as exc:
        common.spec_error(exc)
    data = spec.model_dump(mode="json", exclude_defaults=False)
    if data.get("workdir") is None:
        data["workdir"] = os.getcwd()
    lineage_cmds.add_provenance(data, data["workdir"])
    client = common.client()
    try:
        run = client.submit(data)
    except ApiError as exc:
        common.fail(exc)
    _submitted(run, as_json)
    if wait:
        raise typer.Exit(_wait(client, run["id"], timeout_s=None, poll_s=2.0, quiet=as_json))


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
    as_json: JsonOpt = False,
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
            limit=limit,
            cursor=cursor,
        )
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json(page)
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
    client = common.client()
    try:
        run = client.run(run_id)
        outputs = lineage_cmds.run_outputs(client, run_id)
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
    as_json: JsonOpt = False,
) -> None:
    """Fix and rerun: a new run from RUN's spec with changes, linked both ways."""
    body: dict[str, Any] = {"set": list(set_ or [])}
    if spec_file is not None:
        from gateway.adapters.files import load_spec_file

        try:
            body["spec"] = load_spec_file(spec_file).model_dump(mode="json")
        except SpecError as exc:
            common.spec_error(exc)
    client = common.client()
    try:
        run = client.rerun(run_id, body)
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json(run)
        return
    _submitted(run, False)
    for change in run.get("derived_diff") or []:
        console.print(
            f"  changed {change['path']}: {change['before']!r} -> {change['after']!r}", markup=False
        )


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
        _write(chunk["text"])
        if chunk.get("problem"):
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
    raise typer.Exit(_wait(common.client(), run_id, timeout_s=timeout_s, poll_s=poll_s, quiet=False))


def _wait(client: GatewayClient, run_id: str, *, timeout_s: float | None, poll_s: float, quiet: bool) -> int:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = None
    while True:
        try:
            run: dict[str, Any] = client.run(run_id)
        except ApiError as exc:
            if exc.status in (0, 502, 503):  # the server restarts or Slurm is slow: keep waiting
                time.sleep(poll_s)
                continue
            common.fail(exc)
        if run["state"] != last and not quiet:
            err_console.print(f"run {run_id}: {state_text(run['state'])}")
            last = run["state"]
        if run["state"] in TERMINAL:
            return exits.for_end_state(run["state"])
        if deadline is not None and time.monotonic() > deadline:
            err_console.print(f"run {run_id} is still {run['state']} after {timeout_s:g} s")
            return exits.WAIT_TIMEOUT
        time.sleep(poll_s)


@app.command()
def health(as_json: JsonOpt = False) -> None:
    """Is the gateway up, and can it reach its database and Slurm?"""
    try:
        report = common.client().health()
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json(report)
    else:
        console.print(f"gateway {state_text('succeeded' if report['status'] == 'ok' else 'failed')}")
        for line in health_lines(report):
            console.print(line, markup=False)
    if report.get("status") != "ok":
        raise typer.Exit(exits.UNAVAILABLE)


serve_cmds.register(app, admin)
usage_cmds.register(app)
sbatch_cmd.register(app, _wait)
token_cmds.register(app)
admin_cmds.register(admin)
accounting_cmds.register(app, admin)
data_cmds.register(app)
eval_cmds.register(app)
release_cmds.register(app)
evidence_cmds.register(app)
poc_cmds.register(app)
report_cmds.register(app)
telemetry_cmds.register(app)

if __name__ == "__main__":
    app()
