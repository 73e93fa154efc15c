"""API schemas, named by role: ``RunPublic``, ``RunsPublic`` ... (requests take ``RunSpec``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from gateway.core.described import ASSIGNMENT, documented
from gateway.core.explain.pending import Explanation
from gateway.core.runs.timeline import wait_by_reason
from gateway.core.runs.values import Attempt, Page, Run, StateEvent
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import RunSpec
from gateway.services.runs.check import RunCheck
from gateway.services.runs.logs import LogChunk
from gateway.services.runs.run_service import RunView


class StateEventPublic(BaseModel):
    at: datetime
    from_state: RunState | None
    to_state: RunState
    slurm_state: str | None
    reason: str | None
    source: str = Field(description="Who saw it: gateway, sbatch, squeue, sacct or reconcile")

    @classmethod
    def of(cls, event: StateEvent) -> StateEventPublic:
        return cls(**{k: getattr(event, k) for k in cls.model_fields})


class WaitPublic(BaseModel):
    reason: str
    seconds: float


class WaitingPublic(BaseModel):
    """Why the run waits now, from Slurm's reason code and the numbers behind it."""

    code: str = Field(description="Slurm's pending reason, e.g. AssocGrpGRES")
    category: str = Field(description="quota, resources, priority, dependency, held, time_limit, ...")
    summary: str
    details: list[str]
    actions: list[str] = Field(description="What the user can do")
    blocking: dict[str, Any] | None = Field(description="The cap that blocks: scope, resource, used, cap")

    @classmethod
    def of(cls, explanation: Explanation) -> WaitingPublic:
        blocking = explanation.blocking.__dict__ if explanation.blocking else None
        return cls(
            code=explanation.code,
            category=explanation.category,
            summary=explanation.summary,
            details=list(explanation.details),
            actions=list(explanation.actions),
            blocking=blocking,
        )


class AttemptPublic(BaseModel):
    number: int
    tag: str = Field(description="Unique tag carried in the Slurm job's --comment")
    job_id: str | None
    cluster: str | None = Field(
        default=None,
        description="The Slurm cluster its job is on (job ids are unique per cluster only); null: recorded "
        "before the gateway knew clusters, the first cluster's (docs/clusters.md)",
    )
    state: RunState
    slurm_state: str | None
    reason: str | None = Field(description="Slurm's pending reason, or why the gateway set this state")
    stale: bool = Field(description="Slurm could not be asked on the last refresh; state is the last known")
    node_list: str | None
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    expected_start: datetime | None = Field(description="Slurm's start estimate while pending")
    exit_code: int | None
    exit_signal: int | None
    elapsed_s: int | None
    alloc_tres: dict[str, str]
    max_rss_kb: int | None
    cancelled_by_uid: int | None
    timelimit_min: int | None
    array_size: int | None
    tasks: dict[str, dict[str, Any]]
    origin: str = Field(
        description="submit, retry (the gateway's retry policy), requeue (Slurm's) or resubmit (a job the "
        "run submitted itself: docs/cli.md#a-job-that-resubmits-itself)"
    )
    excluded_nodes: list[str] | None
    failure: dict[str, Any] | None = Field(
        description="Why it failed: class, summary, action and evidence (exit code, failing step, log tail)"
    )
    events: list[StateEventPublic]
    waits: list[WaitPublic] = Field(description="Seconds spent waiting, per pending reason")

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptPublic:
        data = {k: getattr(attempt, k) for k in cls.model_fields if k not in ("events", "waits")}
        waits = wait_by_reason(attempt.events, now=datetime.now(UTC))
        return cls(
            **data,
            events=[StateEventPublic.of(e) for e in attempt.events],
            waits=[WaitPublic(reason=r, seconds=round(s, 1)) for r, s in waits],
        )


class RunSummary(BaseModel):
    id: str
    name: str
    project: str
    queue: str
    submitter: str
    tags: list[str]
    state: RunState
    job_id: str | None = Field(description="Slurm job id of the latest attempt")
    cluster: str | None = Field(
        default=None, description="The cluster of the latest attempt's job (null: recorded before clusters)"
    )
    attempt_count: int
    parent_run_id: str | None = Field(default=None, description="The run this one was derived from (rerun)")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, run: Run) -> RunSummary:
        latest = run.latest
        return cls(
            id=run.id,
            name=run.name,
            project=run.project,
            queue=run.queue,
            submitter=run.submitter,
            tags=run.tags,
            state=run.state,
            job_id=latest.job_id if latest else None,
            cluster=latest.cluster if latest else None,
            attempt_count=len(run.attempts),
            parent_run_id=run.parent_run_id,
            created_at=run.created_at,
            updated_at=run.updated_at,
        )


class RunPublic(RunSummary):
    spec: dict[str, Any] = Field(description="The run spec as submitted, with every default filled in")
    spec_sha256: str
    os_user: str | None = Field(default=None, description="The OS account its jobs run as")
    requested_by: str | None = Field(
        default=None,
        description="Who asked for the run when not its submitter: a lead's rerun of another person's run "
        "runs as that person (the submitter, their OS user) and names the lead here",
    )
    script: str = Field(description="The rendered sbatch script, exactly as submitted")
    script_sha256: str
    template_name: str
    template_version: str
    run_dir: str
    attempts: list[AttemptPublic] = Field(description="Every attempt (Slurm job), oldest first")
    waiting: WaitingPublic | None = Field(default=None, description="Why it waits, while it waits")
    derived_diff: list[dict[str, Any]] | None = Field(
        default=None, description="For a rerun: the spec changes against the parent, path by path"
    )
    children: list[str] = Field(default_factory=list, description="Runs derived from this one (reruns)")
    code: dict[str, Any] | None = Field(
        default=None, description="git repo, commit, branch, dirty, diff_sha256"
    )
    environment: dict[str, Any] | None = Field(
        default=None, description="container image and digest, venv package list hash, modules"
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="Said on submission: e.g. the project's run directories near or over their space limit",
    )

    @classmethod
    def of(cls, run: Run, waiting: Explanation | None = None, children: list[str] | None = None) -> RunPublic:
        summary = RunSummary.of(run).model_dump()
        return cls(
            **summary,
            spec=run.spec.model_dump(mode="json"),
            spec_sha256=run.spec_sha256,
            os_user=run.os_user,
            requested_by=run.requested_by,
            script=run.script,
            script_sha256=run.script_sha256,
            template_name=run.template_name,
            template_version=run.template_version,
            run_dir=run.run_dir,
            attempts=[AttemptPublic.of(a) for a in run.attempts],
            waiting=WaitingPublic.of(waiting) if waiting else None,
            derived_diff=run.derived_diff,
            children=children or [],
            code=run.code,
            environment=run.environment,
        )

    @classmethod
    def of_view(cls, view: RunView) -> RunPublic:
        return cls.of(view.run, waiting=view.waiting, children=view.children)


class RerunRequest(BaseModel):
    """Changes for a rerun: ``set`` edits of the parent's spec, or a whole new ``spec``."""

    model_config = ConfigDict(extra="forbid")

    set: list[Annotated[str, documented(pattern=ASSIGNMENT)]] = Field(
        default_factory=list,
        max_length=100,
        description="KEY.PATH=VALUE edits, e.g. resources.mem_gb=4, params.lr=0.01 (values read as YAML)",
    )
    spec: RunSpec | None = Field(default=None, description="A whole spec instead of edits")
    as_me: bool = Field(
        default=False,
        description="Rerun another person's run under your own identity (your OS user), running their "
        "command as you; audited with the command. Without it a rerun of someone else's run runs as its "
        "owner (a lead's right; only resources, queue, qos, hold, requeue, resumable, retry, tags, name "
        "and comment may change), and is refused (403) otherwise",
    )


class RunCheckPublic(BaseModel):
    """What submitting the spec would do (``POST /runs/check``); nothing was recorded or queued."""

    project: str
    queue: str
    partition: str
    account: str | None
    qos: str | None
    os_user: str = Field(description="The OS user the job would run as")
    walltime_min: int | None = Field(
        description="The job's time limit in minutes: the spec's walltime_min, else the partition's "
        "DefaultTime (MaxTime without one), read from Slurm"
    )
    walltime_source: str = Field(description="Where walltime_min comes from")
    gpus: int = Field(description="GPUs one job holds at once")
    gpu_hours: float = Field(description="GPU-hours one job may use over its walltime (what quotas count)")
    script: str = Field(description="The sbatch script as it would be submitted")
    slurm_test: str | None = Field(
        description="What Slurm's own sbatch --test-only said (expected start, nodes, partition); "
        "null unless slurm_test=true was asked"
    )

    @classmethod
    def of(cls, check: RunCheck) -> RunCheckPublic:
        return cls(**check.__dict__)


class RunsPublic(BaseModel):
    items: list[RunSummary]
    next_cursor: str | None = Field(description="Pass as ?cursor= to get the next page; null on the last")

    @classmethod
    def of(cls, page: Page) -> RunsPublic:
        cursor = page.next_cursor.encode() if page.next_cursor else None
        return cls(items=[RunSummary.of(r) for r in page.items], next_cursor=cursor)


class LogChunkPublic(BaseModel):
    run_id: str
    attempt: int
    job_id: str | None
    task: str | None
    stream: str
    path: str
    exists: bool = Field(description="False until Slurm has created the file")
    size_bytes: int = Field(description="The file's size when it was read")
    offset_bytes: int = Field(description="Where text starts in the file")
    next_offset_bytes: int = Field(description="Pass back as ?offset_bytes= to follow the file")
    text: str = Field(description="What was read, decoded as UTF-8 (undecodable bytes replaced)")
    problem: str | None = Field(
        default=None,
        description="Why nothing was read: not a regular file, not readable by the job's OS user, ...",
    )
    array_tasks: str | None = Field(
        default=None,
        description="An array's task indices (0-2,5); `task` is the one shown (the first unless ?task= said)",
    )
    expired: str | None = Field(
        default=None,
        description="'files expired on DATE by rule R' when a retention sweep deleted the file "
        "(docs/retention.md)",
    )

    @classmethod
    def of(cls, chunk: LogChunk) -> LogChunkPublic:
        return cls(**chunk.__dict__)


class HopPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    hop: str = Field(
        description="The SSH hop to the submit host and its login mode, e.g. ssh://svc@login1:22 (sudo); "
        "a failed probe's error names the host (and a refused host key's SHA256 fingerprint)"
    )
    ok: bool
    latency_ms: float | None = Field(
        description="One trivial command over the hop and back; null when it failed"
    )
    error: str | None = None


class CheckPublic(BaseModel):
    ok: bool
    latency_ms: float | None
    error: str | None = None
    via: HopPublic | None = Field(
        default=None,
        description="Slurm only: the SSH hop its commands go through (a cluster's: its own submit_host's, "
        "else GATEWAY_SUBMIT_HOST's); null when they run on the gateway's host",
    )
    last_answered_at: datetime | None = Field(
        default=None,
        description="Slurm only: when its controller last answered this gateway process (this check, the "
        "refresh cycle); null when it has not yet",
    )
    down_since: datetime | None = Field(
        default=None,
        description="Slurm only: since when its controller has not answered (null while it answers); its "
        "queues refuse submissions meanwhile (docs/clusters.md)",
    )


class HealthPublic(BaseModel):
    status: str = Field(
        description="ok, or degraded when a dependency (or one cluster of several) does not answer"
    )
    database: CheckPublic
    slurm: CheckPublic = Field(description="Slurm; with several clusters, the first (default) one's")
    clusters: dict[str, CheckPublic] | None = Field(
        default=None,
        description="With several clusters in the site file: each one's check, by name (docs/clusters.md); "
        "the answer is 503 only when none answers. Absent with one cluster",
    )


class FieldIssuePublic(BaseModel):
    """One thing wrong with a request: where, what is valid, and the value given (cut short)."""

    loc: list[str | int] = Field(description="Where: body, query, path or header, then the field path")
    msg: str = Field(description="What is wrong and what is valid")
    input: Any = Field(description="The value given, cut to a readable length")


class ErrorPublic(BaseModel):
    """Every error answer: a kind, and a message or (422) the list of issues."""

    error: str = Field(description="A short machine-readable kind, e.g. not_found, invalid_request")
    detail: str | list[FieldIssuePublic]
    run_id: str | None = Field(default=None, description="The run the error is about, when one was recorded")
