"""A sweep's tasks as records (gateway.core.runs.tasks): points, accounting, best first."""

from __future__ import annotations

import math
from dataclasses import replace

from gateway.core.runs.tasks import SweepTask, default_order, metric_names, rank_tasks


def task(index: int, **metrics: float) -> SweepTask:
    return SweepTask(
        run_id="r-1", attempt=1, index=index, params={"lr": index}, point={"lr": index}, state="succeeded",
        job_id=str(100 + index), array_job_id="100", exit_code=0, exit_signal=None, elapsed_s=1,
        node_list="c1", task_dir=f"/runs/r-1/tasks/{index}", metrics=dict(metrics),
    )  # fmt: skip


def test_best_first_puts_tasks_without_the_metric_or_with_nan_last_in_index_order():
    tasks = [task(0, loss=0.5), task(1), task(2, loss=0.1), task(3, loss=math.nan), task(4, loss=0.5)]
    assert [t.index for t in rank_tasks(tasks, "loss", "min")] == [2, 0, 4, 1, 3]
    assert [t.index for t in rank_tasks(tasks, "loss", "max")] == [0, 4, 2, 1, 3]
    named = metric_names([task(0, loss=1, acc=2), replace(task(1), metrics={"f1": 1})])
    assert named == ["acc", "f1", "loss"]


def test_a_loss_or_error_is_best_lowest_a_score_highest():
    assert [default_order(m) for m in ("val_loss", "error_rate", "ppl", "accuracy", "reward")] == [
        "min", "min", "min", "max", "max",
    ]  # fmt: skip
