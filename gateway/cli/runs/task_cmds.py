"""gw tasks: a sweep's array tasks as run-like records (``GET /runs/{id}/tasks``), best first on request."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import typer

from gateway.cli.common import JsonOpt, call, usage
from gateway.cli.output import console, print_json, print_tsv
from gateway.client.values import task_of
from gateway.core.runs.tasks import SweepTask, default_order, rank_tasks


def register(app: typer.Typer) -> None:
    """Add ``gw tasks`` to ``app``."""
    app.command()(tasks)


def tasks(
    run_id: Annotated[str, typer.Argument(help="Run id of a sweep (a spec with `sweep:`).")],
    best: Annotated[
        str | None, typer.Option(help="Order by this final metric, best first (tasks without it last).")
    ] = None,
    order: Annotated[
        Literal["min", "max"] | None,
        typer.Option(
            help="With --best: min (lowest first) or max; default min for a loss or error, else max."
        ),
    ] = None,
    attempt: Annotated[int | None, typer.Option(help="Attempt number (default: latest).")] = None,
    fmt: Annotated[
        Literal["table", "tsv"], typer.Option("--format", help="table, or tsv for scripts.")
    ] = "table",
    as_json: JsonOpt = False,
) -> None:
    """A sweep's tasks, one a line: index, state, exit, elapsed, node, its sweep point, final metrics.

    Each task's log: gw logs RUN --task N; one task in full: gw tasks RUN --json."""
    data = call("tasks", run_id, attempt=attempt)
    shown = [task_of(t) for t in data["tasks"]]
    if best is not None:
        if best not in data["metric_names"]:
            known = ", ".join(data["metric_names"]) or "none yet"
            usage(f"no task of run {run_id} has a metric {best!r}; its metrics: {known}")
        shown = rank_tasks(shown, best, order or default_order(best))
    if as_json:
        order_of = {t.index: n for n, t in enumerate(shown)}
        print_json({**data, "tasks": sorted(data["tasks"], key=lambda t: order_of[t["index"]])})
        return
    metrics = ([best] if best else []) + [m for m in data["metric_names"] if m != best]
    columns = ("task", "state", "exit", "elapsed_s", "node", "point", *metrics)
    rows = [_row(t, metrics) for t in shown]
    if fmt == "tsv":
        print_tsv(columns, rows)
        return
    states: dict[str, int] = {}
    for t in shown:
        states[t.state] = states.get(t.state, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    console.print(
        f"run {data['run_id']} attempt {data['attempt']} (array job {data['array_job_id'] or '-'}): "
        f"{len(shown)} tasks: {summary}" + (f"; best first by {best}" if best else ""),
        markup=False,
    )
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)] if rows else []
    for line in [list(columns), *rows]:
        console.print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip(), markup=False)


def _row(task: SweepTask, metrics: list[str]) -> list[str]:
    exit_text = "-" if task.exit_code is None else str(task.exit_code)
    if task.exit_signal:
        exit_text += f":{task.exit_signal}"
    point = " ".join(f"{k}={json.dumps(v)}" for k, v in task.point.items())
    values = [f"{task.metrics[m]:.6g}" if m in task.metrics else "-" for m in metrics]
    elapsed = "-" if task.elapsed_s is None else str(task.elapsed_s)
    return [str(task.index), task.state, exit_text, elapsed, task.node_list or "-", point, *values]
