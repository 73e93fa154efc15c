"""API schemas for projects, usage, the queue view, audit, tokens and the site file."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from gateway.domain import AuditEvent, Project, Token
from gateway.services.usage import ProjectUsage, QueueView, Use


class QuotaPublic(BaseModel):
    gpus: int | None
    gpu_hours_per_month: int | None
    jobs_in_queue: int | None


class QueuePublic(BaseModel):
    name: str
    partition: str
    qos: str | None
    gpu_types: list[str]
    max_walltime_min: int | None


class MemberPublic(BaseModel):
    user: str
    role: str
    quota: QuotaPublic


class ProjectPublic(BaseModel):
    name: str
    description: str
    slurm_account: str
    quota: QuotaPublic
    members: list[MemberPublic]
    queues: list[QueuePublic]

    @classmethod
    def of(cls, project: Project) -> ProjectPublic:
        return cls(
            name=project.name,
            description=project.description,
            slurm_account=project.slurm_account,
            quota=QuotaPublic(**project.quota.__dict__),
            members=[
                MemberPublic(user=m.user, role=m.role, quota=QuotaPublic(**m.quota.__dict__))
                for m in project.members
            ],
            queues=[QueuePublic(**q.__dict__) for q in project.queues],
        )


class UsePublic(BaseModel):
    used: float
    cap: float | None = Field(description="null: no cap")

    @classmethod
    def of(cls, use: Use) -> UsePublic:
        return cls(used=use.used, cap=use.cap)


class UserUsePublic(BaseModel):
    user: str = Field(description="OS user, as Slurm accounts it")
    gpus: UsePublic
    gpu_hours: UsePublic
    jobs_in_queue: UsePublic


class UsageReportPublic(BaseModel):
    project: str
    account: str
    since: datetime = Field(description="Start of the month GPU-hours count from (UTC)")
    gpus: UsePublic = Field(description="GPUs in use now")
    gpu_hours: UsePublic = Field(description="GPU-hours this month")
    jobs_in_queue: UsePublic
    running_gpu_jobs: list[str]
    users: list[UserUsePublic]

    @classmethod
    def of(cls, usage: ProjectUsage) -> UsageReportPublic:
        return cls(
            project=usage.project,
            account=usage.account,
            since=usage.since,
            gpus=UsePublic.of(usage.gpus),
            gpu_hours=UsePublic.of(usage.gpu_hours),
            jobs_in_queue=UsePublic.of(usage.jobs_in_queue),
            running_gpu_jobs=usage.running_gpu_jobs,
            users=[
                UserUsePublic(
                    user=u.user,
                    gpus=UsePublic.of(u.gpus),
                    gpu_hours=UsePublic.of(u.gpu_hours),
                    jobs_in_queue=UsePublic.of(u.jobs_in_queue),
                )
                for u in usage.users
            ],
        )


class NodePublic(BaseModel):
    name: str
    state: str
    cpus: int
    alloc_cpus: int
    gpus: int
    gpus_alloc: int
    gpus_free: int
    reason: str | None


class JobPublic(BaseModel):
    job_id: str
    user: str
    account: str | None
    name: str
    state: str
    reason: str | None
    nodes: str | None
    gpus: int
    priority: int | None
    run_id: str | None = Field(description="The gateway run this job belongs to, if any")


class PartitionViewPublic(BaseModel):
    name: str
    state: str
    max_time_min: int | None
    nodes: list[NodePublic]
    running: list[JobPublic]
    pending: list[JobPublic]


class QueueViewPublic(BaseModel):
    partitions: list[PartitionViewPublic]
    projects: list[UsageReportPublic]

    @classmethod
    def of(cls, view: QueueView) -> QueueViewPublic:
        def job(j) -> JobPublic:  # noqa: ANN001 - JobStatus
            run_id = None
            if j.comment and j.comment.startswith("gw-r-"):
                run_id = j.comment.removeprefix("gw-").rsplit("-", 1)[0]
            return JobPublic(
                job_id=j.job_id,
                user=j.user,
                account=j.account,
                name=j.name,
                state=j.state.value,
                reason=j.reason,
                nodes=j.node_list,
                gpus=j.gpus,
                priority=j.priority,
                run_id=run_id,
            )

        return cls(
            partitions=[
                PartitionViewPublic(
                    name=p.partition.name,
                    state=p.partition.state,
                    max_time_min=p.partition.max_time_min,
                    nodes=[
                        NodePublic(
                            name=n.name,
                            state=n.state,
                            cpus=n.cpus,
                            alloc_cpus=n.alloc_cpus,
                            gpus=n.gpus,
                            gpus_alloc=n.gpus_alloc,
                            gpus_free=max(n.gpus - n.gpus_alloc, 0),
                            reason=n.reason,
                        )
                        for n in p.nodes
                    ],
                    running=[job(j) for j in p.running],
                    pending=[job(j) for j in p.pending],
                )
                for p in view.partitions
            ],
            projects=[UsageReportPublic.of(u) for u in view.projects],
        )


class AuditEventPublic(BaseModel):
    seq: int
    at: datetime
    actor: str
    action: str
    target_type: str
    target_id: str
    project: str | None
    source: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    prev_hash: str
    hash: str

    @classmethod
    def of(cls, event: AuditEvent) -> AuditEventPublic:
        return cls(**event.__dict__)


class AuditPagePublic(BaseModel):
    items: list[AuditEventPublic]
    next_after: int | None = Field(description="Pass as ?after= for the next page; null on the last")


class AuditVerifyPublic(BaseModel):
    ok: bool
    problems: list[str] = Field(description="One line per edited or missing event")


class TokenPublic(BaseModel):
    id: int
    user: str
    name: str
    prefix: str = Field(description="The token's first characters, to recognise it")
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None

    @classmethod
    def of(cls, token: Token) -> TokenPublic:
        return cls(**token.__dict__)


class TokenCreate(BaseModel):
    user: str | None = Field(default=None, description="Whose token (admins only); default: the caller")
    name: str = "default"
    expires_in_days: float | None = Field(default=90, description="null: never expires")


class TokenIssued(TokenPublic):
    token: str = Field(description="The secret: shown once, store it now")


class ChangesPublic(BaseModel):
    changes: list[str] = Field(description="One line per change; empty when nothing changed")
    slurm: list[str] = Field(default_factory=list, description="Changes pushed to Slurm's associations")
