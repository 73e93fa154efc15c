"""Recording each array task's metrics when it ends, so a sweep's tasks compare from the database.

The output harvest (``outputs.py``, after each refresh) calls ``harvest_live``
for the sweeps still running (the tasks Slurm reported ended since the last
cycle) and ``harvest_attempt`` within an ended attempt's own harvest (every
ended task not recorded yet). A task's metrics files are the spec's
``metrics``, relative to its own directory (``GW_TASK_DIR``), read as the
job's OS user through the run host (``read_metrics``); what cannot be read is
the task's note. A task is recorded once per attempt
(``gateway/store/lineage/task_metrics.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from gateway.adapters.runhost import RunHost
from gateway.core.runs.tasks import task_dir
from gateway.errors import GatewayError, RunHostUnavailable
from gateway.services.lineage.metrics_files import read_metrics
from gateway.services.runs.logs import JobFiles
from gateway.store.lineage.task_metrics import TaskMetricsStore, TaskResult

log = logging.getLogger(__name__)


def read_task(host: RunHost, run_dir: str, index: int, metrics: list[str], *, as_user: str) -> TaskResult:
    """What task ``index``'s metrics files hold now (RunHostUnavailable when the host cannot be
    reached; anything else that goes wrong is the result's note)."""
    notes: list[str] = []
    try:
        summary, series = read_metrics(host, task_dir(run_dir, index), metrics, as_user=as_user, notes=notes)
    except RunHostUnavailable:
        raise
    except GatewayError as exc:
        notes.append(f"metrics not read: {exc}")
        summary, series = None, None
    return TaskResult(summary=summary or {}, series=series or {}, note="; ".join(notes) or None)


@dataclass
class TaskHarvestReport:
    tasks: int = 0  # tasks recorded
    problems: list[str] = field(default_factory=list)


class TaskHarvester:
    def __init__(self, store: TaskMetricsStore, host: RunHost, files: JobFiles) -> None:
        self.store = store
        self.host = host
        self.files = files

    def harvest_live(self, limit: int = 50) -> TaskHarvestReport:
        """Record the ended tasks of up to ``limit`` running sweeps; one sweep's problem never stops
        the others (the host unreachable: tried next cycle, nothing recorded)."""
        report = TaskHarvestReport()
        for sweep in self.store.live_sweeps(limit):
            try:
                user = self.files.job_user(sweep.run_id, sweep.os_user, sweep.submitter)
                report.tasks += self.harvest_attempt(
                    sweep.run_id, sweep.attempt_id, sweep.run_dir, sweep.metrics, sweep.ended, user=user
                )
            except GatewayError as exc:
                log.warning("task metrics of run %s: %s", sweep.run_id, exc)
                report.problems.append(f"{sweep.run_id}: task metrics: {exc}")
        return report

    def harvest_attempt(
        self,
        run_id: str,
        attempt_id: int,
        run_dir: str,
        metrics: list[str],
        indices: Iterable[int],
        *,
        user: str,
    ) -> int:
        """Read and record the metrics of the tasks ``indices`` not recorded yet; how many were new."""
        todo = sorted(set(indices) - self.store.harvested(attempt_id))
        if not todo or not metrics:
            return 0
        results = {i: read_task(self.host, run_dir, i, metrics, as_user=user) for i in todo}
        return self.store.record(run_id, attempt_id, results)
