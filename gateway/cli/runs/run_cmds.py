"""gw runs, show, cancel, logs and wait: a run's listing, its page, its output and its end.

Registered on ``gw`` by ``gateway.cli.main`` (the run commands are no lazy entries).
"""

from __future__ import annotations

import sys
import time
from typing import Annotated, Literal

import typer

from gateway.cli import common
from gateway.cli.common import JsonOpt
from gateway.cli.output import (
    console,
    err_console,
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


def wait(
    run_id: Annotated[str, typer.Argument(help="Run id.")],
    timeout_s: Annotated[
        float | None, typer.Option("--timeout", help="Give up after this many seconds.")
    ] = None,
    poll_s: Annotated[float, typer.Option(help="Seconds between checks.")] = 2.0,
) -> None:
    """Wait for a run to end; exit 0 if it succeeded, 1 if it failed, 3 if cancelled, 124 on time-out."""
    raise typer.Exit(wait_for(common.client(), run_id, timeout_s=timeout_s, poll_s=poll_s, quiet=False))
