"""Quota arithmetic: what a run asks for, whether it can ever fit, and GPU-hours used."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from gateway.core.projects import Quota
from gateway.core.slurm.records import AccountingRecord
from gateway.core.spec.run_spec import RunSpec


@dataclass(frozen=True)
class Ask:
    """What one job (or one array task) of a run holds at once, and at most over its walltime."""

    gpus: int
    gpu_hours: float

    @classmethod
    def of(cls, spec: RunSpec, *, walltime_min: int | None = None) -> Ask:
        """What one job of ``spec`` holds: its GPUs (per node x nodes, per task x tasks, or per job),
        and that x its walltime in hours: ``walltime_min`` (the limit Slurm gives a run that sets
        none, such as the partition's DefaultTime), else the spec's; neither counts 0 hours."""
        gpus = spec.resources.gpus_total()
        minutes = walltime_min if walltime_min is not None else spec.resources.walltime_min
        return cls(gpus=gpus, gpu_hours=gpus * (minutes or 0) / 60)


def never_fits(ask: Ask, caps: Iterable[tuple[str, Quota]]) -> list[str]:
    """Why the run could never start under these caps (empty when it could).

    ``caps`` pairs a scope ("project vision", "user alice in project vision")
    with its quota. A run that merely has to wait for others to finish fits.
    """
    problems = []
    for scope, quota in caps:
        if quota.gpus is not None and ask.gpus > quota.gpus:
            problems.append(
                f"it asks for {ask.gpus} GPUs at once; the cap of {scope} is {quota.gpus}: "
                f"ask for at most {quota.gpus}, or ask a project lead to raise the cap"
            )
        if quota.gpu_hours_per_month is not None and ask.gpu_hours > quota.gpu_hours_per_month:
            problems.append(
                f"it may use {ask.gpu_hours:g} GPU-hours ({ask.gpus} GPUs x its walltime); "
                "the monthly cap of "
                f"{scope} is {quota.gpu_hours_per_month}: shorten the walltime or use fewer GPUs"
            )
        if quota.jobs_in_queue is not None and quota.jobs_in_queue == 0:
            problems.append(f"{scope} may not queue any job (jobs in queue cap 0)")
    return problems


def month_start(now: datetime) -> datetime:
    """Midnight UTC on the first of ``now``'s month: where monthly GPU-hours count from."""
    now = now.astimezone(UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def gpu_hours(records: Iterable[AccountingRecord], *, since: datetime, now: datetime) -> dict[str, float]:
    """GPU-hours per user: allocated GPUs x the part of each allocation after ``since``
    (running ones count up to ``now``)."""
    used: dict[str, float] = {}
    for record in records:
        if not record.alloc_gpus or record.start_time is None:
            continue
        start = max(record.start_time, since)
        end = record.end_time or now
        if end > start:
            used[record.user] = (
                used.get(record.user, 0.0) + record.alloc_gpus * (end - start).total_seconds() / 3600
            )
    return used
