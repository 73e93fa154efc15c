"""Registering what ended attempts wrote: declared outputs become artifacts, metrics files run metrics.

A scheduler job (``gw serve``) calls ``harvest_due`` after each refresh.
For every ended attempt not harvested yet, the run's ``outputs`` patterns
are matched under its run directory and each regular file found is hashed,
on the run host, as the OS user the job ran as (``RunHost.scan_outputs``);
it is recorded with its size and the attempt, unless an earlier attempt of
the run recorded the same path with the same content. The ``metrics`` files
are read (``.json``: a summary, ``.jsonl``: per-step series;
``gateway/core/lineage/run_metrics.py`` documents the format) and replace the run's
metrics.

Files are only read inside the run directory: symlinks are skipped (a job
cannot make the gateway hash a file elsewhere), and so is anything that
resolves outside it, or that is not a regular file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gateway.adapters.runhost import OutputScan, RunHost
from gateway.core.runs.tasks import TASKS_DIR
from gateway.core.site.secrets import delivered_path
from gateway.errors import GatewayError, RunHostUnavailable
from gateway.services.accounting.telemetry import TelemetryHarvester
from gateway.services.lineage.metrics_files import read_metrics
from gateway.services.lineage.task_harvest import TaskHarvester
from gateway.services.runs.logs import JobFiles
from gateway.store.lineage.lineage import HarvestJob, LineageStore

log = logging.getLogger(__name__)

MAX_FILES_PER_ATTEMPT = 10_000


@dataclass
class HarvestReport:
    attempts: int = 0
    artifacts: int = 0
    tasks: int = 0  # sweep tasks whose metrics were recorded
    problems: list[str] = field(default_factory=list)


class OutputHarvester:
    def __init__(
        self,
        store: LineageStore,
        host: RunHost,
        files: JobFiles,
        telemetry: TelemetryHarvester | None = None,
        tasks: TaskHarvester | None = None,
    ) -> None:
        self.store = store
        self.host = host
        self.files = files
        self.telemetry = telemetry  # GPU telemetry, harvested with the outputs (docs/telemetry.md)
        self.tasks = tasks  # a sweep's tasks' metrics, each recorded when the task ends

    def harvest_due(self, limit: int = 50) -> HarvestReport:
        """Harvest up to ``limit`` ended attempts; a problem with one never stops the others."""
        report = HarvestReport()
        for job in self.store.due_harvest(limit):
            try:
                report.artifacts += self.harvest(job)
                report.attempts += 1
            except RunHostUnavailable as exc:  # try again next cycle; nothing was recorded
                log.warning("outputs of run %s attempt %s: %s", job.run_id, job.attempt_number, exc)
                report.problems.append(f"{job.run_id}#{job.attempt_number}: {exc}")
                continue
            except GatewayError as exc:
                log.warning("outputs of run %s attempt %s: %s", job.run_id, job.attempt_number, exc)
                report.problems.append(f"{job.run_id}#{job.attempt_number}: {exc}")
                self.store.record_outputs(job, files=[], summary=None, series=None, note=str(exc))
            report.problems += self._remove_secrets(job)
        if self.tasks is not None:
            live = self.tasks.harvest_live()
            report.tasks += live.tasks
            report.problems += live.problems
        return report

    def _remove_secrets(self, job: HarvestJob) -> list[str]:
        """Delete the files the run's site and project secrets were delivered in, once its last
        attempt ended (a retry still to come, or a later attempt, needs them); problems, one line each."""
        if not (job.held_secrets and job.final):
            return []
        try:
            user = self.files.job_user(job.run_id, job.os_user, job.submitter)
            for var in job.held_secrets:
                self.host.remove_file(delivered_path(job.run_dir, var), as_user=user)
        except GatewayError as exc:
            log.warning("secret files of run %s: %s", job.run_id, exc)
            return [f"{job.run_id}: secret files not removed: {exc}"]
        return []

    def harvest(self, job: HarvestJob) -> int:
        """Record one attempt's outputs, metrics and GPU telemetry; returns how many artifacts were new."""
        if not job.started:
            self.store.record_outputs(job, files=[], summary=None, series=None, note="the job never started")
            return 0
        notes: list[str] = []
        if self.telemetry is not None:
            self._telemetry(job, notes)
        if not (job.outputs or job.metrics):
            self.store.record_outputs(job, files=[], summary=None, series=None, note="; ".join(notes))
            return 0
        user = self.files.job_user(job.run_id, job.os_user, job.submitter)
        files: list[tuple[str, int, str]] = []
        if job.outputs:
            # a sweep's task writes its outputs in its own directory (GW_TASK_DIR): tasks/<i>/<pattern>
            patterns = job.outputs + ([f"{TASKS_DIR}/*/{p}" for p in job.outputs] if job.sweep else [])
            scan = self.host.scan_outputs(
                job.run_dir, patterns, as_user=user, max_files=MAX_FILES_PER_ATTEMPT
            )
            known = self.store.known_files(job.run_id)
            files = [(f.path, f.size_bytes, f.sha256) for f in scan.files if (f.path, f.sha256) not in known]
            notes += _scan_notes(scan, job.outputs)
        if job.sweep and job.metrics and self.tasks is not None:
            # each ended task's own metrics, recorded before the attempt is marked harvested
            self.tasks.harvest_attempt(
                job.run_id, job.attempt_id, job.run_dir, job.metrics, job.tasks_ended, user=user
            )
        summary, series = read_metrics(self.host, job.run_dir, job.metrics, as_user=user, notes=notes)
        self.store.record_outputs(job, files=files, summary=summary, series=series, note="; ".join(notes))
        return len(files)

    def _telemetry(self, job: HarvestJob, notes: list[str]) -> None:
        """Harvest the attempt's GPU telemetry; a problem is a note (RunHostUnavailable: raised, retried)."""
        assert self.telemetry is not None
        try:
            self.telemetry.harvest(
                job, user=lambda: self.files.job_user(job.run_id, job.os_user, job.submitter)
            )
        except RunHostUnavailable:
            raise
        except GatewayError as exc:
            notes.append(f"GPU telemetry not harvested: {exc}")


def _scan_notes(scan: OutputScan, patterns: list[str]) -> list[str]:
    notes = []
    if not scan.files and not scan.errors:
        notes.append(f"no file matched {', '.join(patterns)}")
    if scan.truncated:
        notes.append(f"more than {MAX_FILES_PER_ATTEMPT} output files; the rest were not registered")
    if scan.skipped:
        notes.append(f"{scan.skipped} matched path(s) skipped: symlinks or not regular files")
    notes += [f"cannot read {e}" for e in scan.errors]
    return notes
