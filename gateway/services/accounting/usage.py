"""Project usage against caps (GPUs now, GPU-hours this month, jobs in queue), and the admin's queue view."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from gateway.adapters.slurm.clusters import DEFAULT_NAME, SlurmClusters
from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core.access.policy import require
from gateway.core.access.quota import gpu_hours, month_start
from gateway.core.access.values import Principal
from gateway.core.projects import Project, Quota
from gateway.core.slurm.records import JobStatus, NodeInfo, PartitionInfo
from gateway.core.slurm.states import RunState
from gateway.errors import GatewayError, SlurmError
from gateway.store.access.access import AccessStore

UseUnit = Literal["GPUs", "GPU-hours", "jobs"]


@dataclass(frozen=True)
class Use:
    """One cap and how much of it is used, both counted in ``unit``.

    "GPUs": held at once by running jobs; "GPU-hours": this calendar month (UTC); "jobs": queued + running.
    """

    used: float
    cap: float | None  # None: no cap
    unit: UseUnit

    @property
    def full(self) -> bool:
        """True when there is a cap and ``used`` has reached it."""
        return self.cap is not None and self.used >= self.cap


@dataclass(frozen=True)
class UserUse:
    user: str  # OS user, as Slurm knows them
    gpus: Use
    gpu_hours: Use
    jobs_in_queue: Use


@dataclass(frozen=True)
class ProjectUsage:
    project: str
    account: str
    since: datetime
    gpus: Use
    gpu_hours: Use
    jobs_in_queue: Use
    running_gpu_jobs: list[str]  # job ids holding GPUs now
    users: list[UserUse] = field(default_factory=list)
    cluster: str = DEFAULT_NAME  # the Slurm cluster these numbers are from (each keeps its own)


@dataclass(frozen=True)
class ClusterUsage:
    """A project's usage on one cluster, or why that cluster could not say."""

    cluster: str
    usage: ProjectUsage | None
    error: str | None = None  # the cluster's Slurm did not answer (``usage`` None)


@dataclass(frozen=True)
class PartitionView:
    partition: PartitionInfo
    nodes: list[NodeInfo]
    running: list[JobStatus]
    pending: list[JobStatus]
    cluster: str | None = None  # whose partition, when the site file lists clusters
    error: str | None = None  # the cluster did not answer: no partition facts (``partition`` a stand-in)


@dataclass(frozen=True)
class QueueView:
    partitions: list[PartitionView]
    projects: list[ProjectUsage]


class UsageService:
    def __init__(
        self, access: AccessStore, slurm: SlurmBackend, clusters: SlurmClusters | None = None
    ) -> None:
        self.access = access
        self.slurm = slurm
        self.clusters = clusters  # the queue view's clusters (docs/clusters.md)

    def project_usage(
        self,
        principal: Principal,
        project: str,
        *,
        cluster: str | None = None,
        now: datetime | None = None,
    ) -> ProjectUsage:
        """``usage`` of project ``project`` (two Slurm calls) on ``cluster`` (None: the first; each
        cluster enforces the caps on its own associations); NotFound when there is no such project, the
        caller is not in it, or there is no such cluster (naming the clusters).
        """
        require(principal, "project.read", project, hide=True)
        found = self.access.project(project)
        slurm = None
        if cluster is not None and self.clusters is not None:
            slurm = self.clusters.get(self.clusters.check(cluster))
        return self.usage(found, now=now, slurm=slurm, cluster=cluster)

    def project_clusters(self, principal: Principal, project: str) -> list[str]:
        """The clusters ``project`` has queues on, in the site file's order (the first cluster alone
        when it has no queue); NotFound as ``project_usage``."""
        require(principal, "project.read", project, hide=True)
        return self._clusters_of(self.access.project(project))

    def _clusters_of(self, project: Project) -> list[str]:
        """The clusters ``project`` has queues on, in the site file's order (the first alone if none)."""
        if self.clusters is None:
            return [DEFAULT_NAME]
        used = {self.clusters.of_queue(q) for q in project.queues}
        return [name for name in self.clusters.names() if name in used] or [self.clusters.first()]

    def usage_by_cluster(
        self, principal: Principal, project: str, *, now: datetime | None = None
    ) -> list[ClusterUsage]:
        """``project_usage`` on each of ``project_clusters``; a cluster whose Slurm does not answer
        is given by its error, and the others are still asked."""
        out = []
        for name in self.project_clusters(principal, project):
            if (silent := self._known_down(name)) is not None:
                out.append(ClusterUsage(name, None, silent))
                continue
            try:
                out.append(ClusterUsage(name, self.project_usage(principal, project, cluster=name, now=now)))
            except GatewayError as exc:
                out.append(ClusterUsage(name, None, str(exc)))
        return out

    def _known_down(self, name: str) -> str | None:
        """Why cluster ``name`` is not asked: known not to answer (the refresh cycle or a health check
        saw it), so a page waits on no timeout of its; None when it is to be asked."""
        down = self.clusters.down(name) if self.clusters is not None else None
        if down is None:
            return None
        return (
            f"cluster {name} did not answer (not answering {down.since_said()}); it is asked again once "
            "a refresh cycle or health check finds it answering"
        )

    def usage(
        self,
        project: Project,
        *,
        now: datetime | None = None,
        slurm: SlurmBackend | None = None,
        cluster: str | None = None,
    ) -> ProjectUsage:
        """Two Slurm calls: sacct for this month's GPU-hours, squeue for GPUs in use and jobs in queue,
        on ``slurm``, cluster ``cluster``'s backend (Slurm holds each cluster's associations to their
        caps apart; default: the service's own, the first cluster's)."""
        if cluster is None:
            cluster = self.clusters.first() if self.clusters is not None else DEFAULT_NAME
        now = now or datetime.now(UTC)
        since = month_start(now)
        slurm = slurm or self.slurm
        records = slurm.usage([project.slurm_account], since=since)
        live = slurm.jobs(accounts=[project.slurm_account])
        hours = gpu_hours(records, since=since, now=now)
        # GPUs in use now come from squeue: slurmdbd learns of a start a few seconds late.
        running = [j for j in live if j.state is RunState.RUNNING and j.gpus]
        gpus_by_user: dict[str, int] = {}
        for job in running:
            gpus_by_user[job.user] = gpus_by_user.get(job.user, 0) + job.gpus
        jobs_by_user: dict[str, int] = {}
        for job in live:
            jobs_by_user[job.user] = jobs_by_user.get(job.user, 0) + 1
        caps = {m.user: m.quota for m in project.members}
        os_users = {u.name: u.os_user for u in self.access.users()}
        user_caps = {os_users.get(name) or name: quota for name, quota in caps.items()}
        users = [
            UserUse(
                user=user,
                **_uses(
                    user_caps.get(user),
                    gpus=gpus_by_user.get(user, 0),
                    gpu_hours=hours.get(user, 0.0),
                    jobs=jobs_by_user.get(user, 0),
                ),
            )
            for user in sorted(set(hours) | set(gpus_by_user) | set(jobs_by_user) | set(user_caps))
        ]
        return ProjectUsage(
            project=project.name,
            account=project.slurm_account,
            since=since,
            **_uses(
                project.quota,
                gpus=sum(gpus_by_user.values()),
                gpu_hours=sum(hours.values()),
                jobs=len(live),
            ),
            running_gpu_jobs=[r.job_id for r in running],
            users=users,
            cluster=cluster,
        )

    def queue(
        self, principal: Principal, *, cluster: str | None = None, now: datetime | None = None
    ) -> QueueView:
        """Per partition: nodes with GPUs in use and free, running and pending jobs; per project: usage.

        With clusters listed in the site file, the partitions and each project's usage of each (of
        ``cluster`` alone when given:
        NotFound naming the clusters when it is none of them), a cluster that does not answer shown by
        its error; with none listed, the one cluster's, as before (``cluster`` must then be its name).
        """
        require(principal, "site.admin")
        listed = self.clusters is not None and bool(self.clusters.listed())
        if self.clusters is not None and cluster is not None:
            self.clusters.check(cluster)
        if not listed or self.clusters is None:
            views = self._partitions(self.slurm, None)
        else:
            names = [cluster] if cluster else self.clusters.names()
            views = [v for name in names for v in self._cluster_partitions(name)]
        return QueueView(partitions=views, projects=self._queue_usage(cluster if listed else None, now))

    def _queue_usage(self, cluster: str | None, now: datetime | None) -> list[ProjectUsage]:
        """Each project's usage on each cluster it has queues on (on ``cluster`` alone when given), by
        cluster in the site file's order; a cluster that does not answer is left out (its partitions
        entry says why)."""
        projects = self.access.projects()
        if self.clusters is None or not self.clusters.listed():
            return [self.usage(p, now=now) for p in projects]
        out = []
        for name in [cluster] if cluster else self.clusters.names():
            if self._known_down(name) is not None:
                continue
            slurm = self.clusters.get(name)
            try:
                out += [
                    self.usage(p, now=now, slurm=slurm, cluster=name)
                    for p in projects
                    if name in self._clusters_of(p)
                ]
            except SlurmError:
                continue  # its partitions' entry carries the error
        return out

    def _cluster_partitions(self, name: str) -> list[PartitionView]:
        assert self.clusters is not None
        try:
            return self._partitions(self.clusters.get(name), name)
        except SlurmError as exc:
            missing = PartitionInfo("-", False, "UNKNOWN", "", 0, 0, None, None, None, None)
            return [PartitionView(missing, [], [], [], cluster=name, error=str(exc))]

    def _partitions(self, slurm: SlurmBackend, cluster: str | None) -> list[PartitionView]:
        nodes = slurm.nodes()
        jobs = slurm.jobs()
        views = []
        for partition in slurm.partitions():
            in_partition = [j for j in jobs if j.partition == partition.name]
            views.append(
                PartitionView(
                    partition=partition,
                    nodes=[n for n in nodes if partition.name in n.partitions],
                    running=[j for j in in_partition if j.state is RunState.RUNNING],
                    pending=sorted(
                        (j for j in in_partition if j.state in (RunState.QUEUED, RunState.HELD)),
                        key=lambda j: -(j.priority or 0),
                    ),
                    cluster=cluster,
                )
            )
        return views


def _uses(quota: Quota | None, *, gpus: int, gpu_hours: float, jobs: int) -> dict[str, Use]:
    """Fields ``gpus``, ``gpu_hours`` (to 3 places), ``jobs_in_queue`` of a usage, against ``quota``."""
    quota = quota or Quota()
    return {
        "gpus": Use(gpus, quota.gpus, "GPUs"),
        "gpu_hours": Use(round(gpu_hours, 3), quota.gpu_hours_per_month, "GPU-hours"),
        "jobs_in_queue": Use(jobs, quota.jobs_in_queue, "jobs"),
    }
