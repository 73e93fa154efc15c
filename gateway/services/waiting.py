"""Why a run waits: Slurm's pending reason, with the numbers behind it, in people's words."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core.explain import Explanation, NodeState, QuotaUse, WaitContext, explain_wait
from gateway.core.states import RunState
from gateway.domain import Run
from gateway.errors import GatewayError, NotFound
from gateway.services.usage import UsageService
from gateway.store.access import AccessStore

log = logging.getLogger(__name__)
WAITING = (RunState.QUEUED, RunState.HELD)


class WaitingService:
    def __init__(self, access: AccessStore, usage: UsageService, slurm: SlurmBackend) -> None:
        self.access = access
        self.usage = usage
        self.slurm = slurm

    def explain(self, run: Run, *, now: datetime | None = None) -> Explanation | None:
        """The explanation for the run's latest attempt while it waits; None when it does not wait.

        Asks Slurm live (squeue of the job, the partition and its nodes, the
        project's usage); when Slurm does not answer, says so instead.
        """
        attempt = run.latest
        if attempt is None or attempt.state not in WAITING or not attempt.job_id:
            return None
        now = now or datetime.now(UTC)
        try:
            statuses = [s for s in self.slurm.status([attempt.job_id]) if s.state in WAITING]
            if not statuses:
                return None
            status = statuses[0]
            project = self.access.project(run.project)
            usage = self.usage.usage(project, now=now)
            partition = next((p for p in self.slurm.partitions() if p.name == status.partition), None)
            nodes = [n for n in self.slurm.nodes() if status.partition in n.partitions]
            queue = self.slurm.jobs(partitions=[status.partition])
        except NotFound:
            return None
        except GatewayError as exc:
            log.warning("cannot explain the wait of %s: %s", run.id, exc)
            return Explanation(
                code=attempt.reason or "none",
                category="unknown",
                summary=f"Slurm did not answer just now ({exc}); the last reason it gave was "
                f"{attempt.reason or 'none'}",
                details=(),
                actions=("Try again in a minute.",),
            )
        resources = run.spec.get("resources", {})
        gpus = int(resources.get("gpus_per_node", 0)) * int(resources.get("nodes", 1))
        scopes = [(f"project {project.name}", usage.gpus, usage.gpu_hours, usage.jobs_in_queue)]
        scopes += [
            (f"user {u.user} in project {project.name}", u.gpus, u.gpu_hours, u.jobs_in_queue)
            for u in usage.users
            if u.user == status.user
        ]
        quotas = [
            QuotaUse(scope, resource, use.used, use.cap)
            for scope, *uses in scopes
            for resource, use in zip(
                ("GPUs at once", "GPU-hours this month", "jobs in queue"), uses, strict=True
            )
            if use.cap is not None
        ]
        ahead = [
            _label(j.job_id, j.comment)
            for j in sorted(queue, key=lambda j: -(j.priority or 0))
            if j.state in WAITING and (j.priority or 0) > (status.priority or 0) and j.job_id != status.job_id
        ]
        running_jobs = {j.job_id: j for j in queue}
        return explain_wait(
            WaitContext(
                reason=status.reason,
                partition=status.partition,
                requested_gpus=gpus,
                requested_cpus=int(resources.get("cpus_per_task", 1))
                * int(resources.get("tasks_per_node", 1)),
                requested_walltime_min=resources.get("walltime_min"),
                partition_max_walltime_min=partition.max_time_min if partition else None,
                start_estimate=status.start_time,
                now=now,
                quotas=tuple(quotas),
                jobs_ahead=tuple(ahead),
                running_in_scope=tuple(
                    _label(j, running_jobs[j].comment if j in running_jobs else None)
                    for j in usage.running_gpu_jobs
                ),
                nodes=tuple(
                    NodeState(n.name, n.state, n.cpus, n.alloc_cpus, n.gpus, n.gpus_alloc, n.reason)
                    for n in nodes
                ),
            )
        )


def _label(job_id: str, comment: str | None) -> str:
    """``job 123 (run r-...)`` for a gateway job (its comment is the attempt tag), else ``job 123``."""
    if comment and comment.startswith("gw-r-"):
        run_id = comment.removeprefix("gw-").rsplit("-", 1)[0]
        return f"job {job_id} (run {run_id})"
    return f"job {job_id}"
