"""Periodic jobs inside ``gw serve`` (APScheduler): each one is a single service call.

``BackgroundWork.cycle`` (refresh, due retries, output harvests) every
``refresh_interval_s``; ``BackgroundWork.reconcile`` every
``RECONCILE_INTERVAL_S``; ``BackgroundWork.ingest_accounting`` (sacct into
the accounting ledger) every ``accounting_interval_s``;
``BackgroundWork.sweep_retention`` (the retention sweep, docs/retention.md) every
``retention_interval_s``; ``BackgroundWork.hand_off`` (the MLflow mirror and webhook
outbox) every ``handoff_interval_s``. What runs, in which order and where (the scheduler
lease) is the service's to decide; this module only keeps time.

Stopping is bounded: ``Periodic.stop`` waits ``scheduler_stop_grace_s`` for the jobs still
running, then lets the process exit without them. Each run is a daemon thread of its own
(``DaemonThreads``): the threads of APScheduler's default pool (``concurrent.futures``) are
joined when the interpreter exits, so one run stuck on a Slurm call held ``gw serve`` after
SIGTERM for as long as the call took.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime
from typing import Any

from apscheduler.executors.base import BaseExecutor, run_job
from apscheduler.schedulers.background import BackgroundScheduler

from gateway.services import Services

RECONCILE_INTERVAL_S = 30
log = logging.getLogger(__name__)


class DaemonThreads(BaseExecutor):
    """An APScheduler executor running each job run in a daemon thread of its own."""

    def __init__(self) -> None:
        super().__init__()
        self._running: dict[threading.Thread, str] = {}  # thread: its job's id
        self._lock = threading.Lock()

    def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:  # noqa: ANN401 - APScheduler's Job
        thread = threading.Thread(target=self._run, args=(job, run_times), name=f"gw-{job.id}", daemon=True)
        with self._lock:
            self._running[thread] = job.id
        thread.start()

    def _run(self, job: Any, run_times: list[datetime]) -> None:  # noqa: ANN401 - APScheduler's Job
        try:
            events = run_job(job, job._jobstore_alias, run_times, self._logger.name)
        except BaseException as exc:  # run_job reports the job's own errors as events: this is ours
            self._run_job_error(job.id, exc, exc.__traceback__)
        else:
            self._run_job_success(job.id, events)
        finally:
            with self._lock:
                self._running.pop(threading.current_thread(), None)

    def wait(self, timeout_s: float | None) -> list[str]:
        """Wait up to ``timeout_s`` (None: however long it takes) for the runs in progress to end; the
        job ids of those still running."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            threads = list(self._running)
        for thread in threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        with self._lock:
            return sorted(job for thread, job in self._running.items() if thread.is_alive())

    def shutdown(self, wait: bool = True) -> None:
        """APScheduler's stop: with ``wait``, until every run has ended (``Periodic.stop`` bounds it)."""
        if wait:
            self.wait(None)


class Periodic:
    """The running scheduler of one ``gw serve`` process and the executor its jobs run in."""

    def __init__(self, scheduler: BackgroundScheduler, executor: DaemonThreads) -> None:
        self.scheduler = scheduler
        self.executor = executor

    def stop(self, grace_s: float) -> list[str]:
        """Start no more jobs and wait up to ``grace_s`` for the runs in progress; the ids of the jobs
        still running then (logged: the process exits without them, their threads being daemons)."""
        self.scheduler.shutdown(wait=False)
        still = self.executor.wait(grace_s)
        if still:
            log.warning(
                "stopping with %s still running after %g s (scheduler_stop_grace_s); the process exits "
                "without it, and a later gw serve settles what it left (stale runs, SUBMITTING attempts)",
                ", ".join(still),
                grace_s,
            )
        return still


def start_scheduler(services: Services) -> Periodic:
    """Start the periodic jobs; one run of each at a time, missed runs coalesced."""
    interval = services.settings.refresh_interval_s
    work = services.background
    executor = DaemonThreads()
    scheduler = BackgroundScheduler(
        executors={"default": executor}, job_defaults={"coalesce": True, "max_instances": 1}
    )
    scheduler.add_job(work.cycle, "interval", seconds=interval, id="refresh")
    scheduler.add_job(work.reconcile, "interval", seconds=RECONCILE_INTERVAL_S, id="reconcile")
    scheduler.add_job(
        work.ingest_accounting, "interval", seconds=services.settings.accounting_interval_s, id="accounting"
    )
    scheduler.add_job(
        work.sweep_retention, "interval", seconds=services.settings.retention_interval_s, id="retention"
    )
    scheduler.add_job(work.hand_off, "interval", seconds=services.settings.handoff_interval_s, id="handoff")
    scheduler.start()
    return Periodic(scheduler, executor)
