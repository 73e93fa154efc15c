"""Registering what ended attempts wrote: declared outputs become artifacts, metrics files run metrics.

A scheduler job (``gw serve``) calls ``harvest_due`` after each refresh.
For every ended attempt not harvested yet, the run's ``outputs`` patterns
are matched under its run directory; each regular file found is hashed
(streaming) and recorded with its size and the attempt, unless an earlier
attempt of the run recorded the same path with the same content. The
``metrics`` files are read (``.json``: a summary, ``.jsonl``: per-step
series; ``gateway/core/metrics.py`` documents the format) and replace the
run's metrics.

Files are only read inside the run directory: symlinks are skipped (a job
cannot make the gateway hash a file elsewhere), and so is anything that
resolves outside it.
"""

from __future__ import annotations

import glob
import logging
import os
import stat
from dataclasses import dataclass, field

from gateway.adapters.files import sha256_file
from gateway.core.metrics import MAX_POINTS, last_values, parse_metrics_json, parse_metrics_jsonl
from gateway.errors import GatewayError
from gateway.store.lineage import HarvestJob, LineageStore

log = logging.getLogger(__name__)

MAX_FILES_PER_ATTEMPT = 10_000
MAX_METRICS_BYTES = 32 * 1024 * 1024


@dataclass
class HarvestReport:
    attempts: int = 0
    artifacts: int = 0
    problems: list[str] = field(default_factory=list)


class OutputHarvester:
    def __init__(self, store: LineageStore) -> None:
        self.store = store

    def harvest_due(self, limit: int = 50) -> HarvestReport:
        """Harvest up to ``limit`` ended attempts; a problem with one never stops the others."""
        report = HarvestReport()
        for job in self.store.due_harvest(limit):
            try:
                report.artifacts += self.harvest(job)
                report.attempts += 1
            except (GatewayError, OSError) as exc:
                log.warning("outputs of run %s attempt %s: %s", job.run_id, job.attempt_number, exc)
                report.problems.append(f"{job.run_id}#{job.attempt_number}: {exc}")
        return report

    def harvest(self, job: HarvestJob) -> int:
        """Record one attempt's outputs and metrics; returns how many artifacts were new."""
        if not job.started or not (job.outputs or job.metrics):
            note = None if job.started else "the job never started"
            self.store.record_outputs(job, files=[], summary=None, series=None, note=note)
            return 0
        notes: list[str] = []
        known = self.store.known_files(job.run_id)
        found = _match(job.run_dir, job.outputs, notes)
        files = []
        for rel in found:
            sha, size = sha256_file(os.path.join(job.run_dir, rel))
            if (rel, sha) not in known:
                files.append((rel, size, sha))
        if not found and job.outputs:
            notes.append(f"no file matched {', '.join(job.outputs)}")
        summary, series = _read_metrics(job.run_dir, job.metrics, notes)
        self.store.record_outputs(job, files=files, summary=summary, series=series, note="; ".join(notes))
        return len(files)


def _inside(run_dir: str, rel: str) -> tuple[bool, os.stat_result | None]:
    """Whether ``rel`` is a regular file reached without symlinks inside ``run_dir``, and its stat."""
    path = run_dir
    for part in rel.split("/"):
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except OSError:
            return False, None
        if stat.S_ISLNK(st.st_mode):
            return False, None
    return stat.S_ISREG(st.st_mode), st


def _match(run_dir: str, patterns: list[str], notes: list[str]) -> list[str]:
    """Relative paths of the regular files under ``run_dir`` matching ``patterns`` (no symlinks)."""
    matched: set[str] = set()
    skipped: set[str] = set()
    for pattern in patterns:
        for rel in glob.iglob(pattern, root_dir=run_dir, recursive=True):
            if rel in matched or rel in skipped:
                continue
            regular, _ = _inside(run_dir, rel)
            if regular:
                matched.add(rel)
            elif not os.path.isdir(os.path.join(run_dir, rel)):
                skipped.add(rel)  # a symlink, or reached through one, or a fifo/socket/device
            if len(matched) > MAX_FILES_PER_ATTEMPT:
                notes.append(f"more than {MAX_FILES_PER_ATTEMPT} output files; the rest were not registered")
                return sorted(matched)[:MAX_FILES_PER_ATTEMPT]
    if skipped:
        notes.append(f"{len(skipped)} matched path(s) skipped: symlinks or not regular files")
    return sorted(matched)


def _read_metrics(
    run_dir: str, paths: list[str], notes: list[str]
) -> tuple[dict[str, float] | None, dict[str, list[tuple[int | None, float]]] | None]:
    summary: dict[str, float] | None = None
    series: dict[str, list[tuple[int | None, float]]] | None = None
    for rel in paths:
        ok, st = _inside(run_dir, rel)
        if not ok:
            notes.append(f"metrics file {rel} not found (or not a regular file)")
            continue
        if st is not None and st.st_size > MAX_METRICS_BYTES:
            notes.append(f"metrics file {rel} is {st.st_size} bytes; at most {MAX_METRICS_BYTES} are read")
            continue
        with open(os.path.join(run_dir, rel), "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
        if rel.endswith(".jsonl"):
            parsed = parse_metrics_jsonl(text)
            if parsed.skipped_lines:
                notes.append(f"metrics file {rel}: {parsed.skipped_lines} line(s) skipped")
            series = {**(series or {}), **parsed.points}
            if summary is None:
                summary = {}
            for name, value in last_values(parsed).items():
                summary.setdefault(name, value)
        else:
            try:
                values = parse_metrics_json(text)
            except ValueError as exc:
                notes.append(f"metrics file {rel}: {exc}")
                continue
            summary = {**(summary or {}), **values}  # a summary file's values win over a series' last ones
    if series is not None:
        total = sum(map(len, series.values()))
        if total > MAX_POINTS:
            notes.append(f"{total} metric points; only the first {MAX_POINTS} kept")
    return summary, series
