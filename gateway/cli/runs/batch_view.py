"""How ``gw submit`` with several specs and ``gw sbatch --each`` show a batch's answers.

One line per item, in order, named by the file it came from: the run, its job and state, or the
item's error with each field issue under it; and the exit status the worst item calls for.
"""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.markup import escape

from gateway.cli import exits
from gateway.cli.output import console, err_console, print_json, state_text
from gateway.client.errors import ApiError


def item_error_lines(error: dict) -> list[str]:
    """An item's error body as lines: its kind and message, or one line per field issue."""
    detail = error.get("detail")
    if isinstance(detail, list):
        lines = [f"error ({error.get('error')}):"]
        for issue in detail:
            where = ".".join(str(p) for p in issue.get("loc", [])[4:]) or "(spec)"
            shown = f" (got {issue['input']!r})" if issue.get("input") is not None else ""
            lines.append(f"    - {where}: {issue.get('msg')}{shown}")
        return lines
    return [f"error ({error.get('error')}): {detail}"]


def show_batch(
    answer: dict, names: list[str], *, as_json: bool, parsable: bool = False, sbatch: bool = False
) -> int:
    """Print a batch's per-item answers (``RunBatchPublic``); the exit status it calls for: 0 when
    every item has a run without an error, else that of the first failed item's status.

    ``parsable``: only each job id on stdout; ``sbatch``: sbatch's own ``Submitted batch job N`` line
    per item on stdout, the run on stderr (scripts read stdout with awk)."""
    if as_json:
        print_json(answer)
    code = exits.OK
    for item in answer["items"]:
        name = names[item["index"]]
        run, error = item.get("run"), item.get("error")
        if not as_json:
            if parsable:
                console.print(run.get("job_id") or "" if run else "")
            elif sbatch and run is not None and error is None:
                if run.get("job_id"):
                    print(f"Submitted batch job {run['job_id']}")
                err_console.print(f"{name}: run {run['id']} ({state_text(run['state'])})", markup=False)
            elif run is not None and error is None:
                job = f"Submitted batch job {run['job_id']}" if run.get("job_id") else "Slurm did not confirm"
                again = " (replayed)" if item.get("replayed") else ""
                console.print(f"{escape(name)}: {job}  run {run['id']} ({state_text(run['state'])}){again}")
            if error is not None:
                lines = item_error_lines(error)
                on_record = f"  run {run['id']} is on record" if run else ""
                err_console.print(f"{name}: {lines[0]}{on_record}", markup=False, highlight=False)
                for line in lines[1:]:
                    err_console.print(line, markup=False, highlight=False)
        if error is not None and code == exits.OK:
            code = exits.for_status(item["status"])
    if not as_json and not parsable:
        err_console.print(
            f"{answer['submitted']} submitted, {answer['replayed']} replayed, {answer['failed']} failed",
            markup=False,
        )
    return code


def batch_refused(exc: ApiError, names: list[str]) -> NoReturn:
    """An all-or-none batch the gateway refused: each refused item by its file, then exit."""
    body = exc.body if isinstance(exc.body, dict) else {}
    if exc.kind != "batch_rejected" or not body.get("items"):
        from gateway.cli import common

        common.fail(exc)
    err_console.print(f"[red]error[/red] ({escape(exc.kind)}): {escape(str(exc.detail))}")
    for item in body["items"]:
        lines = item_error_lines(item["error"])
        err_console.print(f"  {names[item['index']]}: {lines[0]}", markup=False, highlight=False)
        for line in lines[1:]:
            err_console.print(f"  {line}", markup=False, highlight=False)
    raise typer.Exit(exits.for_status(body["items"][0]["status"]))
