"""The values an explanation of a wait is made from and made of (see ``gateway.core.explain.pending``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class QuotaUse:
    """One cap and its current use; ``used`` and ``cap`` count in the unit its ``resource`` names.

    The resource words the explainer matches, with their unit: "GPUs at once", "GPUs per job" (GPUs);
    "GPU-hours this month" (GPU-hours); "CPUs at once" (CPUs); "CPU-hours this month" (CPU-hours);
    "jobs in queue", "running jobs" (jobs); "wall time per job" (minutes). A budget whose words say
    minutes ("GPU-minutes this month") counts in minutes. The API shows this value's fields as they are
    (``blocking``), so a field added here is added there.
    """

    scope: str  # "project vision" or "user alice in project vision"
    resource: str  # what is capped, and so the unit: see above
    used: float  # in the resource's unit
    cap: float  # in the resource's unit


@dataclass(frozen=True)
class NodeState:
    name: str
    state: str  # as scontrol/sinfo print it: "IDLE", "MIXED", "DOWN*", "IDLE+DRAIN" ...
    cpus: int
    alloc_cpus: int
    gpus: int
    gpus_alloc: int
    reason: str | None = None  # the admin's reason for a down or drained node


@dataclass(frozen=True)
class WaitContext:
    reason: str | None  # Slurm's reason code, e.g. "QOSGrpGRES", "Resources", "Priority"
    partition: str
    requested_gpus: int = 0  # per job, total
    requested_cpus: int = 0
    requested_walltime_min: int | None = None
    partition_max_walltime_min: int | None = None
    start_estimate: datetime | None = None  # naive means UTC
    now: datetime | None = None  # for "in 2 h 10 min"
    quotas: tuple[QuotaUse, ...] = ()  # project/user caps with use, from the gateway
    jobs_ahead: tuple[str, ...] = ()  # jobs ahead in the partition, highest priority first
    running_in_scope: tuple[str, ...] = ()  # jobs holding the blocking quota now
    nodes: tuple[NodeState, ...] = ()  # the partition's nodes
    dependency: str | None = None  # the job's dependency expression, if any


@dataclass(frozen=True)
class Explanation:
    code: str  # Slurm's reason as given, whitespace tidied; "none" for None, "" or "None"
    category: str  # quota, resources, priority, dependency, held, time_limit, partition,
    # nodes_unavailable, begin_time, license, reservation, unknown, not_waiting
    summary: str  # one line, plain words, with numbers
    details: tuple[str, ...]  # numbers, node states, jobs ahead, start estimate
    actions: tuple[str, ...]  # what the user can do
    blocking: QuotaUse | None = None  # the cap that blocks, when the reason is a quota
