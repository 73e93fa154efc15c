"""What a submit form may offer, and the exact script a spec would become (no submission).

The web form is generated from these choices: a caller's projects where they
may submit, each project's queues, and per queue the GPU types it allows,
the GPU counts some node of its partition has, and the longest walltime the
queue and its partition allow. Quota left comes from the usage service (two
cached Slurm reads). ``preview`` runs the same admission checks and the same
render path as a submission, writing nothing and submitting nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.core.projects import Project, Queue
from gateway.core.sbatch.render import RenderedScript
from gateway.core.slurm.records import NodeInfo, PartitionInfo
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import SlurmError
from gateway.services.accounting.usage import UsageService
from gateway.services.runs.run_service import RunService

# Walltimes a form offers (minutes), cut at the queue's limit (which is offered too).
WALLTIME_STEPS_MIN = (5, 10, 15, 30, 60, 120, 240, 480, 720, 1440, 2880, 4320, 10080)
PREVIEW_RUN_ID = "r-preview0000000"  # the run id a preview renders with (a submission gets a fresh one)


@dataclass(frozen=True)
class QueueChoices:
    name: str
    partition: str
    gpu_types: list[str]  # empty: the queue takes no GPU jobs
    gpu_counts: list[int]  # GPUs per node some node of the partition has (0 first)
    max_walltime_min: int | None  # None: no limit known
    walltimes_min: list[int]  # the walltimes to offer, the limit last
    cluster: str | None = None  # the cluster its partition is on (its usage is that cluster's)

    @property
    def takes_gpus(self) -> bool:
        """Whether a GPU count above 0 may be asked for here."""
        return len(self.gpu_counts) > 1


@dataclass(frozen=True)
class ProjectChoices:
    name: str
    role: str
    may_submit: bool
    queues: list[QueueChoices] = field(default_factory=list)


@dataclass(frozen=True)
class QuotaLeft:
    """What is left of a project's caps now (None: no cap)."""

    gpus_now: float | None
    gpu_hours_month: float | None
    gpus_cap: float | None
    gpu_hours_cap: float | None
    for_user: str | None = None  # when the member's own cap is tighter than the project's
    cluster: str | None = None  # the Slurm cluster whose usage this is (each keeps its own)


class SubmitFormService:
    def __init__(self, runs: RunService, usage: UsageService) -> None:
        self.runs = runs
        self.usage = usage

    def choices(self, principal: Principal) -> list[ProjectChoices]:
        """The caller's projects (all for a site admin), each with its queues and what they offer.
        Two cached Slurm reads (partitions, nodes) per cluster its queues are on; with several clusters,
        the queues of one that does not answer are offered without its facts."""
        access = self.runs.admission.access
        clusters = self.runs.clusters
        facts: dict[str, tuple[dict[str, PartitionInfo], list[NodeInfo]]] = {}

        def of(queue: Queue) -> tuple[dict[str, PartitionInfo], list[NodeInfo]]:
            name = clusters.of_queue(queue)
            if name not in facts:
                slurm = clusters.get(name)
                try:
                    facts[name] = ({p.name: p for p in slurm.partitions()}, slurm.nodes())
                except SlurmError:
                    if not clusters.listed():
                        raise
                    facts[name] = ({}, [])
            return facts[name]

        out = []
        for project in access.projects():
            role = principal.role(project.name) or ("admin" if principal.is_admin else None)
            if role is None:
                continue
            queues = [
                _queue_choices(q, of(q)[0].get(q.partition), of(q)[1], clusters.of_queue(q))
                for q in project.queues
            ]
            may = allowed(principal, "run.submit", project.name)
            out.append(ProjectChoices(project.name, role, may, queues))
        return out

    def quota_left(self, principal: Principal, project: str, *, cluster: str | None = None) -> QuotaLeft:
        """GPUs free now and GPU-hours left this month under ``project``'s caps (and the caller's own
        member caps, when tighter) on ``cluster`` (None: the first; a queue's usage is its cluster's).
        NotFound when the caller is not in the project or there is no such cluster."""
        use = self.usage.project_usage(principal, project, cluster=cluster)
        found: Project = self.runs.admission.access.project(project)
        member = next((m for m in found.members if m.user == principal.user), None)
        gpus = _left(use.gpus.cap, use.gpus.used)
        hours = _left(use.gpu_hours.cap, use.gpu_hours.used)
        who = None
        if member is not None and principal.os_user:
            mine = next((u for u in use.users if u.user == principal.os_user), None)
            if mine is not None:
                my_gpus, my_hours = (
                    _left(mine.gpus.cap, mine.gpus.used),
                    _left(mine.gpu_hours.cap, mine.gpu_hours.used),
                )
                if my_gpus is not None and (gpus is None or my_gpus < gpus):
                    gpus, who = my_gpus, principal.user
                if my_hours is not None and (hours is None or my_hours < hours):
                    hours, who = my_hours, principal.user
        return QuotaLeft(gpus, hours, use.gpus.cap, use.gpu_hours.cap, who, cluster=use.cluster)

    def preview(self, spec: RunSpec, *, principal: Principal) -> RenderedScript:
        """The sbatch script ``spec`` would be submitted as (with a placeholder run id), after every
        admission check a submission makes: SpecError, QuotaExceeded, Forbidden, NotFound as
        ``RunService.submit`` raises them. Writes and submits nothing."""
        return self.runs.preview(spec, principal=principal, run_id=PREVIEW_RUN_ID)


def _left(cap: float | None, used: float) -> float | None:
    return None if cap is None else max(cap - used, 0)


def _queue_choices(
    queue: Queue, partition: PartitionInfo | None, nodes: list[NodeInfo], cluster: str
) -> QueueChoices:
    """What ``queue`` (on ``cluster``) offers, from its own limits and its partition's nodes."""
    mine = [n for n in nodes if queue.partition in n.partitions]
    if queue.gpu_types:
        with_gpus = [n for n in mine if n.gpus and (n.gpu_type is None or n.gpu_type in queue.gpu_types)]
    else:
        with_gpus = []
    most = max((n.gpus for n in with_gpus), default=0)
    limits = [m for m in (queue.max_walltime_min, partition.max_time_min if partition else None) if m]
    limit = min(limits) if limits else None
    steps = [w for w in WALLTIME_STEPS_MIN if limit is None or w < limit]
    if limit is not None:
        steps.append(limit)
    gpu_types = sorted({n.gpu_type for n in with_gpus if n.gpu_type} & set(queue.gpu_types)) or (
        list(queue.gpu_types) if with_gpus else []
    )
    return QueueChoices(
        queue.name, queue.partition, gpu_types, list(range(most + 1)), limit, steps, cluster=cluster
    )
