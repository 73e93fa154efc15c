"""gw: submit, watch and cancel runs through the gateway API; `gw serve` runs the gateway.

Exit status (``gateway.cli.exits``): 0 ok, 2 bad input, 4 not found, 5 conflict,
69 server/Slurm/database unavailable; ``gw wait``: 0 succeeded, 1 failed,
3 cancelled, 124 timed out.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gateway.cli import admin_cmds, data_cmds, exits, lineage_cmds
from gateway.cli.client import ApiError, GatewayClient
from gateway.cli.lineage_view import provenance_lines
from gateway.cli.output import console, err_console, print_json, runs_table, show_run, state_text
from gateway.errors import GatewayError, SpecError
from gateway.settings import ClientSettings

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__.split("\n\n")[0])
admin = typer.Typer(no_args_is_help=True, help="Operator commands (run on the gateway host).")
db_app = typer.Typer(no_args_is_help=True, help="The gateway's database.")
admin.add_typer(db_app, name="db")
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
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _client() -> GatewayClient:
    return GatewayClient(ClientSettings.load())


def _fail(exc: ApiError) -> NoReturn:
    if isinstance(exc.detail, list):
        err_console.print(f"[red]error[/red] ({exc.kind}):")
        for issue in exc.detail:
            where = ".".join(str(p) for p in issue.get("loc", [])[1:]) or "(request)"
            shown = f" (got {issue['input']!r})" if issue.get("input") is not None else ""
            err_console.print(f"  - {where}: {issue.get('msg')}{shown}", markup=False)
    else:
        err_console.print(f"[red]error[/red] ({exc.kind}): {exc.detail}")
    if exc.run_id:
        err_console.print(f"run {exc.run_id} is on record; see `gw show {exc.run_id}`")
    raise typer.Exit(exits.for_status(exc.status))


def _spec_error(exc: SpecError) -> NoReturn:
    err_console.print(str(exc), markup=False)
    raise typer.Exit(exits.USAGE)


# -- the server ------------------------------------------------------------------


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Run the gateway: the REST API plus the periodic Slurm refresh."""
    import logging

    import uvicorn

    from gateway.api import create_app
    from gateway.settings import Settings

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings()
    except ValueError as exc:
        err_console.print("[red]invalid gateway settings[/red]:")
        err_console.print(str(exc), markup=False)
        raise typer.Exit(exits.USAGE) from exc
    uvicorn.run(create_app(settings, run_scheduler=True), host=host, port=port, log_level=log_level)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Bring the gateway database's schema to the newest version (idempotent)."""
    from gateway.settings import Settings
    from gateway.store import Database

    db = Database(Settings().database_url)
    try:
        db.upgrade()
    except GatewayError as exc:
        err_console.print(f"[red]error[/red]: {exc}")
        raise typer.Exit(exits.UNAVAILABLE) from exc
    finally:
        db.dispose()
    console.print(f"database schema is up to date ({db.dialect})")


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
    from gateway.core.spec import load_spec_file

    try:
        spec = load_spec_file(spec_file)
    except SpecError as exc:
        _spec_error(exc)
    data = spec.model_dump(mode="json", exclude_defaults=False)
    if data.get("workdir") is None:
        data["workdir"] = os.getcwd()
    lineage_cmds.add_provenance(data, data["workdir"])
    client = _client()
    try:
        run = client.submit(data)
    except ApiError as exc:
        _fail(exc)
    _submitted(run, as_json)
    if wait:
        raise typer.Exit(_wait(client, run["id"], timeout_s=None, poll_s=2.0, quiet=as_json))


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def sbatch(ctx: typer.Context) -> None:
    """sbatch habits: gw sbatch OPTIONS... SCRIPT ARGS..., reading #SBATCH lines too."""
    from gateway.cli.sbatch_options import SUPPORTED_HELP, sbatch_to_spec, split_gw_sbatch_args

    args = list(ctx.args)
    if args in (["-h"], ["--help"], []):
        console.print(ctx.get_help())
        console.print(f"Supported sbatch options: {SUPPORTED_HELP}", markup=False)
        raise typer.Exit(exits.OK if args else exits.USAGE)
    try:
        options, script_path, script_args = split_gw_sbatch_args(args)
        path = Path(script_path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            err_console.print(f"gw sbatch: cannot read script {script_path}: {exc}", markup=False)
            raise typer.Exit(exits.USAGE) from exc
        request = sbatch_to_spec(
            options,
            text,
            script_name=path.name,
            cwd=os.getcwd(),
            environ=dict(os.environ),
            script_args=script_args,
        )
    except SpecError as exc:
        _spec_error(exc)
    try:
        run = _client().submit(request.spec)
    except ApiError as exc:
        _fail(exc)
    _submitted(run, False, parsable=request.parsable)


@app.command()
def runs(
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    state: Annotated[str | None, typer.Option(help="Only runs in this state.")] = None,
    submitter: Annotated[str | None, typer.Option(help="Only runs of this user.")] = None,
    tag: Annotated[str | None, typer.Option(help="Only runs with this tag.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    cursor: Annotated[
        str | None, typer.Option(help="Next page: the cursor the previous page printed.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List runs, newest first."""
    try:
        page = _client().runs(
            project=project, state=state, submitter=submitter, tag=tag, limit=limit, cursor=cursor
        )
    except ApiError as exc:
        _fail(exc)
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
    client = _client()
    try:
        run = client.run(run_id)
        outputs = lineage_cmds.run_outputs(client, run_id)
    except ApiError as exc:
        _fail(exc)
    if as_json:
        print_json({**run, "outputs": outputs})
        return
    show_run(run, script=script)
    console.print()
    for line in provenance_lines(run, outputs):
        console.print(line)


@app.command()
def cancel(run_id: Annotated[str, typer.Argument(help="Run id.")], as_json: JsonOpt = False) -> None:
    """Cancel a run's live attempt."""
    try:
        run = _client().cancel(run_id)
    except ApiError as exc:
        _fail(exc)
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
        from gateway.core.spec import load_spec_file

        try:
            body["spec"] = load_spec_file(spec_file).model_dump(mode="json")
        except SpecError as exc:
            _spec_error(exc)
    client = _client()
    try:
        run = client.rerun(run_id, body)
    except ApiError as exc:
        _fail(exc)
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
    client = _client()
    stream = "stderr" if stderr else "stdout"
    try:
        chunk = client.logs(run_id, stream=stream, tail=tail, attempt=attempt, task=task)
        if as_json:
            print_json(chunk)
            return
        _write(chunk["text"])
        if not chunk["exists"] and not follow:
            err_console.print(f"(no output yet: {chunk['path']} does not exist)")
        offset = chunk["next_offset"]
        while follow:
            state = client.run(run_id)["state"]
            time.sleep(poll_s)
            chunk = client.logs(run_id, stream=stream, attempt=attempt, task=task, offset=offset)
            _write(chunk["text"])
            offset = chunk["next_offset"]
            if state in TERMINAL and not chunk["text"]:
                break
    except ApiError as exc:
        _fail(exc)


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
    raise typer.Exit(_wait(_client(), run_id, timeout_s=timeout_s, poll_s=poll_s, quiet=False))


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
            _fail(exc)
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
        report = _client().health()
    except ApiError as exc:
        _fail(exc)
    if as_json:
        print_json(report)
    else:
        console.print(
            f"gateway {state_text('succeeded' if report['status'] == 'ok' else 'failed')}: {report}"
        )
    if report.get("status") != "ok":
        raise typer.Exit(exits.UNAVAILABLE)


admin_cmds.register(app, admin, _client, _fail)
data_cmds.register(app, _client, _fail)

if __name__ == "__main__":
    app()
