"""A sweep's tasks as run-like records: ``GET /runs/{id}/tasks``, ``gw tasks``, the compare page.

Each array task of a sweep is shown with its sweep point (``params``), its
state, exit, elapsed time and node from the attempt's accounting
(``gateway/core/runs/tasks.py``), its logs (``GET /runs/{id}/logs?task=i``),
its metrics and its artifacts. A task writes into its own directory,
``$GW_RUN_DIR/tasks/<i>`` (``GW_TASK_DIR``): the spec's ``metrics`` files are
read there (relative to that directory, as the job's OS user, through the
run host) by the harvest when the task ends and recorded
(``task_harvest.py``), so an ended sweep's tasks are read from the database
in one query; only a task still running (or ended since the last harvest)
has its files read live. Its artifacts are the run's harvested outputs under
``tasks/<i>/`` (the harvest matches each ``outputs`` pattern under every
task directory too).
"""

from __future__ import annotations

from dataclasses import replace

from gateway.adapters.runhost import RunHost
from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.core.runs.tasks import SweepTask, is_sweep, sweep_tasks, task_prefix
from gateway.core.runs.values import Attempt, Run
from gateway.core.sbatch.values import compress_indices
from gateway.errors import GatewayError, NotFound
from gateway.services.lineage.task_harvest import read_task
from gateway.services.runs.logs import JobFiles
from gateway.store.lineage.lineage import LineageStore
from gateway.store.lineage.task_metrics import TaskMetricsStore, TaskResult
from gateway.store.runs.runs import RunStore

UNSTARTED = frozenset({"unknown", "pending", "never_submitted", "submitting"})


class TaskService:
    def __init__(
        self,
        store: RunStore,
        lineage: LineageStore,
        host: RunHost,
        files: JobFiles,
        results: TaskMetricsStore,
    ) -> None:
        self.store = store
        self.lineage = lineage
        self.host = host
        self.files = files
        self.results = results  # each task's metrics as the harvest recorded them when it ended

    def tasks(
        self,
        run_id: str,
        *,
        principal: Principal,
        attempt_number: int | None = None,
        metrics: bool = True,
        series: bool = True,
    ) -> tuple[Run, Attempt, list[SweepTask]]:
        """The run, the attempt shown (the latest unless named) and every task of its array.

        NotFound for a run the caller may not read, one that is not a sweep (saying so), or an
        attempt it does not have. With ``metrics``, each task's metrics (with their series unless
        ``series`` is False): an ended task's as recorded, one query for all (see ``_with_results``)."""
        run, attempt = self._sweep(run_id, principal, attempt_number)
        tasks = sweep_tasks(run, attempt)
        if metrics:
            tasks = self._with_results(run, attempt, tasks, series=series)
        return run, attempt, tasks

    def task(
        self, run_id: str, index: int, *, principal: Principal, attempt_number: int | None = None
    ) -> SweepTask:
        """One task of the sweep, with its metrics (series included) and artifacts."""
        run, attempt = self._sweep(run_id, principal, attempt_number)
        tasks = {t.index: t for t in sweep_tasks(run, attempt)}
        if index not in tasks:
            raise NotFound(
                f"run {run.id} attempt {attempt.number} has no array task {index}; its tasks are "
                f"{compress_indices(sorted(tasks))}"
            )
        (task,) = self._with_results(run, attempt, [tasks[index]])
        return task

    def _sweep(self, run_id: str, principal: Principal, attempt_number: int | None) -> tuple[Run, Attempt]:
        run = self.store.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        if not is_sweep(run):
            raise NotFound(f"run {run.id} is not a sweep: it has no tasks (a sweep's spec has `sweep:`)")
        attempts = {a.number: a for a in run.attempts}
        if not attempts:
            raise NotFound(f"run {run.id} has no attempts")
        number = attempt_number if attempt_number is not None else max(attempts)
        if number not in attempts:
            raise NotFound(f"run {run.id} has no attempt {number}; it has {sorted(attempts)}")
        return run, attempts[number]

    def _with_results(
        self, run: Run, attempt: Attempt, tasks: list[SweepTask], *, series: bool = True
    ) -> list[SweepTask]:
        """``tasks`` with their artifacts and metrics: as the harvest recorded them when the task
        ended, else (a task still running, or ended since the last harvest) what its files hold now."""
        artifacts = self.lineage.artifacts(run.id)
        one = [tasks[0].index] if len(tasks) == 1 else None
        stored = self.results.results(attempt.id, series=series, indices=one) if run.spec.metrics else {}
        user = None
        if run.spec.metrics and any(t.state not in UNSTARTED and t.index not in stored for t in tasks):
            try:
                user = self.files.job_user(run.id, run.os_user, run.submitter)
            except NotFound:
                user = None
        done = []
        for task in tasks:
            prefix = task_prefix(task.index)
            mine = [
                {
                    "path": a.path,
                    "size_bytes": a.size_bytes,
                    "sha256": a.sha256,
                    "attempt": a.attempt_number,
                }
                for a in artifacts
                if a.path.startswith(prefix)
            ]
            result = stored.get(task.index)
            if result is None and user is not None and task.state not in UNSTARTED:
                try:
                    result = read_task(self.host, run.run_dir, task.index, run.spec.metrics, as_user=user)
                except GatewayError as exc:  # the run host unreachable: say so, show the rest
                    result = TaskResult(note=f"metrics not read: {exc}")
            result = result or TaskResult()
            done.append(
                replace(
                    task,
                    metrics=result.summary,
                    series=result.series if series else {},
                    artifacts=mine,
                    notes=[result.note] if result.note else [],
                )
            )
        return done
