"""API schemas for projects, usage, the queue view, audit, tokens and the site file."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.core.access.values import Token
from gateway.core.audit.anchors import AuditVerdict, Checkpoint
from gateway.core.audit.event import AuditEvent
from gateway.core.described import Name
from gateway.core.projects import Project
from gateway.core.slurm.records import JobStatus
from gateway.core.slurm.tags import parse_comment
from gateway.services.accounting.usage import ProjectUsage, QueueView, Use
from gateway.services.site.apply import SiteChanges


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
    whole_node_mem: bool = Field(
        default=False, description="--mem=0 (mem_gb 0: all of each node's memory) is allowed on this queue"
    )
    cluster: str | None = Field(
        default=None,
        description="The cluster whose partition it is (the site file's queue cluster); null: the first "
        "cluster (docs/clusters.md)",
    )


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
    cluster: str = Field(
        description="The Slurm cluster these numbers are from (each enforces the caps on its own "
        "associations; docs/clusters.md)"
    )
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
            cluster=usage.cluster,
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
    cluster: str | None = Field(
        default=None, description="The cluster it is on, when the site file lists clusters (docs/clusters.md)"
    )
    error: str | None = Field(
        default=None, description="The cluster did not answer: why (then name is - and the lists are empty)"
    )


class QueueViewPublic(BaseModel):
    partitions: list[PartitionViewPublic]
    projects: list[UsageReportPublic] = Field(
        description="Each project's usage on each cluster it has queues on (its `cluster`; with ?cluster= "
        "that one's alone); a cluster that does not answer has none here, its partitions entry says why"
    )

    @classmethod
    def of(cls, view: QueueView) -> QueueViewPublic:
        def job(j: JobStatus) -> JobPublic:
            parts = parse_comment(j.comment)
            run_id = parts.run_id if parts and parts.run_id.startswith("r-") else None
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
                    cluster=p.cluster,
                    error=p.error,
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


class CheckpointPublic(BaseModel):
    seq: int = Field(description="The event that was the chain's head")
    hash: str = Field(description="Its hash")
    at: datetime = Field(description="When the checkpoint was written (UTC)")

    @classmethod
    def of(cls, checkpoint: Checkpoint) -> CheckpointPublic:
        return cls(seq=checkpoint.seq, hash=checkpoint.hash, at=checkpoint.at)


class AuditVerifyPublic(BaseModel):
    ok: bool
    problems: list[str] = Field(
        description=(
            "One line per problem: an edited, missing or unchained event, a log that ends before a "
            "checkpoint (events removed from the end), an event that no longer matches its checkpoint, "
            "a missing, unreadable or malformed anchor file"
        )
    )
    events: int = Field(description="Where the log ends: the sequence number of its last event")
    checkpoints: int = Field(description="Checkpoints read from the anchor file and checked")
    last_checkpoint: CheckpointPublic | None = Field(
        description="The newest checkpoint; null: none yet (a cut at the end cannot be detected)"
    )

    @classmethod
    def of(cls, verdict: AuditVerdict) -> AuditVerifyPublic:
        last = verdict.last_checkpoint
        return cls(
            ok=verdict.ok,
            problems=list(verdict.problems),
            events=verdict.events,
            checkpoints=verdict.checkpoints,
            last_checkpoint=CheckpointPublic.of(last) if last else None,
        )


class TokenPublic(BaseModel):
    id: int
    user: str
    name: str
    prefix: str = Field(description="The token's first characters, to recognise it")
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    scope: Literal["api", "metrics"] = Field(
        description="api: the API and web UI; metrics: GET /metrics and nothing else (docs/metrics.md)"
    )

    @classmethod
    def of(cls, token: Token) -> TokenPublic:
        return cls(**token.__dict__)


# The service's rule (more than 0, at most 3650), in the schema; the service refuses with its own message.
ExpiryDays = Annotated[float, Field(json_schema_extra={"exclusiveMinimum": 0, "maximum": 3650})]


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str | None = Field(default=None, description="Whose token (admins only); default: the caller")
    name: Name = "default"
    expires_in_days: ExpiryDays | None = Field(
        default=90, allow_inf_nan=False, description="Days until it expires (at most 3650); null: never"
    )


class TokenIssued(TokenPublic):
    token: str = Field(description="The secret: shown once, store it now")


class ChangesPublic(BaseModel):
    changes: list[str] = Field(description="One line per change; empty when nothing changed")
    slurm: list[str] = Field(default_factory=list, description="Changes pushed to Slurm's associations")
    kept: list[str] = Field(
        default_factory=list,
        description="Users and projects the site file leaves out, kept because `prune` was not given",
    )

    @classmethod
    def of(cls, changes: SiteChanges) -> ChangesPublic:
        return cls(changes=changes.changes, slurm=changes.slurm, kept=changes.kept)
