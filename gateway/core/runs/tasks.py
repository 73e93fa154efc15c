"""A sweep's tasks as run-like records (no I/O): each array task's sweep point, state, exit, node.

A sweep is one Slurm job array (``spec.sweep``); task *i* runs with param set
*i* laid over the run's ``params`` and writes into its own directory,
``$GW_RUN_DIR/tasks/<i>`` (``GW_TASK_DIR``, see templates/sbatch/array.sbatch.j2).
``sweep_tasks`` reads what the attempt's accounting says of each task;
``rank_tasks`` orders them by one final metric, best first, for a compare
page. Metrics and artifacts of a task are filled in by the service
(``gateway/services/lineage/tasks.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.core.runs.values import Attempt, Run

TASKS_DIR = "tasks"  # under the run directory: one directory per array task
Order = Literal["min", "max"]


def task_dir(run_dir: str, index: int) -> str:
    """Where array task ``index`` of a run writes its own files (``GW_TASK_DIR``)."""
    return f"{run_dir}/{TASKS_DIR}/{index}"


def task_prefix(index: int) -> str:
    """The path prefix, relative to the run directory, of task ``index``'s files."""
    return f"{TASKS_DIR}/{index}/"


@dataclass(frozen=True)
class SweepTask:
    """One array task of a sweep, as a run-like record."""

    run_id: str
    attempt: int  # the attempt whose array this task belongs to
    index: int  # the Slurm array index
    params: dict[str, Any]  # the sweep point laid over the run's params: what the task ran with
    point: dict[str, Any]  # the sweep point alone (what varies between tasks)
    state: str  # pending, running, succeeded, failed ... ("unknown" until Slurm reported it)
    job_id: str | None  # the task's own job id (sacct's JobIDRaw); None until Slurm reported it
    array_job_id: str | None  # the array's job id (``%A``)
    exit_code: int | None
    exit_signal: int | None
    elapsed_s: int | None
    node_list: str | None
    task_dir: str  # its own directory (GW_TASK_DIR)
    metrics: dict[str, float] = field(default_factory=dict)  # final values (a summary's, a series' last)
    series: dict[str, list[tuple[int | None, float]]] = field(default_factory=dict)
    artifacts: list[dict[str, Any]] = field(default_factory=list)  # path, size_bytes, sha256, attempt
    notes: list[str] = field(default_factory=list)  # why a metrics file was not read ...


def is_sweep(run: Run) -> bool:
    """The run is a sweep: one array job of param sets."""
    return run.spec.sweep is not None


def sweep_tasks(run: Run, attempt: Attempt) -> list[SweepTask]:
    """Every task of ``attempt``'s array, in index order, with its point and accounting.

    A task Slurm has not reported yet is ``unknown``; ``run`` must be a sweep (``is_sweep``)."""
    assert run.spec.sweep is not None
    sweep = run.spec.sweep
    tasks = []
    for index, point in zip(sweep.task_indices(), sweep.expand(), strict=True):
        seen = attempt.tasks.get(str(index)) or {}
        tasks.append(
            SweepTask(
                run_id=run.id,
                attempt=attempt.number,
                index=index,
                params={**run.spec.params, **point},
                point=dict(point),
                state=str(seen.get("state") or "unknown"),
                job_id=str(seen["job_id"]) if seen.get("job_id") else None,
                array_job_id=attempt.job_id,
                exit_code=seen.get("exit_code"),
                exit_signal=seen.get("exit_signal"),
                elapsed_s=seen.get("elapsed_s"),
                node_list=seen.get("node_list"),
                task_dir=task_dir(run.run_dir, index),
            )
        )
    return tasks


def metric_names(tasks: list[SweepTask]) -> list[str]:
    """Every metric some task has a final value of, sorted."""
    return sorted({name for t in tasks for name in t.metrics})


def default_order(metric: str) -> Order:
    """Best first: lowest for a loss or an error, highest otherwise (accuracy, reward ...)."""
    lowered = metric.lower()
    return (
        "min"
        if any(word in lowered for word in ("loss", "err", "perplexity", "ppl", "time", "mse"))
        else "max"
    )


def rank_tasks(tasks: list[SweepTask], metric: str, order: Order) -> list[SweepTask]:
    """``tasks`` best first by ``metric`` (``min``: lowest first); tasks without it (or NaN) last,
    in index order."""
    have = [t for t in tasks if _finite(t.metrics.get(metric))]
    missing = [t for t in tasks if not _finite(t.metrics.get(metric))]
    have.sort(key=lambda t: (t.metrics[metric] if order == "min" else -t.metrics[metric], t.index))
    return have + missing


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
