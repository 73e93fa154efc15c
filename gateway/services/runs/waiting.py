"""Why a run waits: Slurm's pending reason, with the numbers behind it, in people's words."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core.explain.pending import Explanation, NodeState, QuotaUse, WaitContext, explain_wait
from gateway.core.runs.values import Attempt, Run
from gateway.core.slurm.records import JobStatus, NodeInfo
from gateway.core.slurm.states import WAITING
from gateway.core.slurm.tags import parse_comment
from gateway.errors import GatewayError, NotFound
from gateway.services.accounting.usage import ProjectUsage, UsageService
from gateway.store.access.access import AccessStore

log = logging.getLogger(__name__)


class WaitingService:
    def __init__(self, access: AccessStore, usage: UsageService, clusters: SlurmClusters) -> None:
        self.access = access
        self.usage = usage
        self.clusters = clusters  # the facts are those of the cluster the attempt's job is on

    def _cluster_of(self, attempt: Attempt) -> tuple[str, SlurmBackend]:
        """The name and backend of the cluster ``attempt`` is on (NotFound: one no longer listed)."""
        name = self.clusters.name_of(attempt.cluster)
        return name, self.clusters.get(name)

    def explain(self, run: Run, *, now: datetime | None = None) -> Explanation | None:
        """The explanation for the run's latest attempt while it waits; None when it does not wait.

        Reads what the refresh cycle last stored for the attempt (its state and Slurm's reason)
        and cluster facts (the live job list, the partition and its nodes, the project's usage)
        from the attempt's own cluster (job ids and partition names repeat across clusters),
        through its backend, which ``gateway.wiring`` gives a short-lived cache: watching a run
        costs Slurm nothing of its own. When Slurm does not answer, says so instead.
        """
        attempt = run.latest
        if attempt is None or attempt.state not in WAITING or not attempt.job_id:
            return None
        now = now or datetime.now(UTC)
        cluster = ""
        try:
            cluster, slurm = self._cluster_of(attempt)
            project = self.access.project(run.project)
            queue_of_run = project.queue(run.queue)
            every_job = slurm.jobs()
            status = next(
                (j for j in every_job if attempt.job_id in (j.job_id, j.array_job_id) and j.state in WAITING),
                None,
            )
            partition_name = status.partition if status else queue_of_run.partition if queue_of_run else None
            if partition_name is None:
                return None
            usage = self.usage.usage(project, now=now, slurm=slurm, cluster=cluster)
            partition = next((p for p in slurm.partitions() if p.name == partition_name), None)
            nodes = [n for n in slurm.nodes() if partition_name in n.partitions]
            queue = [j for j in every_job if j.partition == partition_name]
        except NotFound:
            return None
        except GatewayError as exc:
            log.warning("cannot explain the wait of %s: %s", run.id, exc)
            whose = f"Slurm of cluster {cluster}" if cluster and self._several() else "Slurm"
            return Explanation(
                code=attempt.reason or "none",
                category="unknown",
                summary=f"{whose} did not answer just now ({exc}); the last reason it gave was "
                f"{attempt.reason or 'none'}",
                details=(),
                actions=("Try again in a minute.",),
            )
        return explain_wait(
            _context(
                run,
                reason=attempt.reason if attempt.reason is not None else status.reason if status else None,
                status=status,
                partition_name=partition_name,
                partition_max_min=partition.max_time_min if partition else None,
                start_estimate=attempt.expected_start or (status.start_time if status else None),
                usage=usage,
                nodes=nodes,
                queue=queue,
                now=now,
            )
        )

    def _several(self) -> bool:
        return len(self.clusters.names()) > 1


def _context(
    run: Run,
    *,
    reason: str | None,
    status: JobStatus | None,
    partition_name: str,
    partition_max_min: int | None,
    start_estimate: datetime | None,
    usage: ProjectUsage,
    nodes: list[NodeInfo],
    queue: list[JobStatus],
    now: datetime,
) -> WaitContext:
    """What ``explain_wait`` needs: the request, the caps in use, the jobs ahead, the nodes."""
    resources = run.spec.resources
    own_user = status.user if status else run.os_user
    scopes = [(f"project {usage.project}", usage.gpus, usage.gpu_hours, usage.jobs_in_queue)]
    scopes += [
        (f"user {u.user} in project {usage.project}", u.gpus, u.gpu_hours, u.jobs_in_queue)
        for u in usage.users
        if u.user == own_user
    ]
    quotas = [
        QuotaUse(scope, resource, use.used, use.cap)
        for scope, *uses in scopes
        for resource, use in zip(("GPUs at once", "GPU-hours this month", "jobs in queue"), uses, strict=True)
        if use.cap is not None
    ]
    own_priority = (status.priority or 0) if status else 0
    own_id = status.job_id if status else run.latest.job_id if run.latest else None
    ahead = [
        _label(j.job_id, j.comment)
        for j in sorted(queue, key=lambda j: -(j.priority or 0))
        if j.state in WAITING and (j.priority or 0) > own_priority and j.job_id != own_id
    ]
    running_jobs = {j.job_id: j for j in queue}
    return WaitContext(
        reason=reason,
        partition=partition_name,
        requested_gpus=resources.gpus_total(),
        requested_cpus=(resources.cpus_per_task or 1) * (resources.ntasks or resources.tasks_per_node or 1),
        requested_walltime_min=resources.walltime_min,
        partition_max_walltime_min=partition_max_min,
        start_estimate=start_estimate,
        now=now,
        quotas=tuple(quotas),
        jobs_ahead=tuple(ahead),
        running_in_scope=tuple(
            _label(j, running_jobs[j].comment if j in running_jobs else None) for j in usage.running_gpu_jobs
        ),
        nodes=tuple(
            NodeState(n.name, n.state, n.cpus, n.alloc_cpus, n.gpus, n.gpus_alloc, n.reason) for n in nodes
        ),
    )


def _label(job_id: str, comment: str | None) -> str:
    """``job 123 (run r-...)`` for a gateway job (its comment is the attempt tag), else ``job 123``."""
    parts = parse_comment(comment)
    return f"job {job_id} (run {parts.run_id})" if parts else f"job {job_id}"
