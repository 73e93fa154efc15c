"""ORM rows. They stay inside ``gateway.store``; services see the core's values."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from gateway.core.clock import utcnow


class UTCDateTime(TypeDecorator):
    """Aware UTC datetimes in, aware UTC datetimes out, on SQLite and PostgreSQL alike."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        """An aware datetime as the database stores it: UTC, naive on SQLite. ValueError for a
        naive one (the store only takes aware UTC datetimes).
        """
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use aware UTC datetimes")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        """A stored datetime back as an aware UTC one (SQLite gives it naive)."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    if TYPE_CHECKING:
        # Every model here maps one Table (none a join or a select); SQLAlchemy types it as the wider
        # FromClause, which insert() and update() do not take.
        __table__: ClassVar[Table]


class ProjectNamedRow:
    """The columns of a thing a project owns under a name of its own (a dataset, an eval suite, a
    model): each table adds its own ``UniqueConstraint("project", "name")``."""

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunRow(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    project: Mapped[str] = mapped_column(String(64), index=True)
    queue: Mapped[str] = mapped_column(String(64))
    submitter: Mapped[str] = mapped_column(String(128), index=True)
    # The OS account the run's jobs run as, fixed at submission (None for runs from before 0005).
    os_user: Mapped[str | None] = mapped_column(String(32))
    # Who asked for the run when not its submitter: a rerun on the owner's behalf (0012).
    requested_by: Mapped[str | None] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(32), index=True)
    spec: Mapped[dict] = mapped_column(JSON)
    spec_sha256: Mapped[str] = mapped_column(String(64))
    script: Mapped[str] = mapped_column(Text)
    script_sha256: Mapped[str] = mapped_column(String(64))
    template_name: Mapped[str] = mapped_column(String(128))
    template_version: Mapped[str] = mapped_column(String(32))
    run_dir: Mapped[str] = mapped_column(String(1024))
    # A rerun points at the run it was derived from, with the spec changes as a diff.
    parent_run_id: Mapped[str | None] = mapped_column(String(64), index=True)
    derived_diff: Mapped[list | None] = mapped_column(JSON)
    # Inputs beyond datasets (run_inputs): the code (git repo, commit, dirty) and the environment.
    code: Mapped[dict | None] = mapped_column(JSON)
    environment: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    attempts: Mapped[list[AttemptRow]] = relationship(
        back_populates="run", order_by="AttemptRow.number", cascade="all, delete-orphan"
    )
    tags: Mapped[list[RunTagRow]] = relationship(cascade="all, delete-orphan")

    __table_args__ = (Index("ix_runs_created", "created_at", "id"),)


class RunTagRow(Base):
    __tablename__ = "run_tags"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)


class AttemptRow(Base):
    __tablename__ = "attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    tag: Mapped[str] = mapped_column(String(128), unique=True)
    job_id: Mapped[str | None] = mapped_column(String(32), index=True)
    state: Mapped[str] = mapped_column(String(32), index=True)
    slurm_state: Mapped[str | None] = mapped_column(String(32))
    reason: Mapped[str | None] = mapped_column(String(256))
    stale: Mapped[bool] = mapped_column(Boolean, default=False)
    node_list: Mapped[str | None] = mapped_column(String(1024))
    submit_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    start_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    end_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    exit_signal: Mapped[int | None] = mapped_column(Integer)
    elapsed_s: Mapped[int | None] = mapped_column(Integer)
    alloc_tres: Mapped[dict] = mapped_column(JSON, default=dict)
    max_rss_kb: Mapped[int | None] = mapped_column(BigInteger)
    cancelled_by_uid: Mapped[int | None] = mapped_column(Integer)
    timelimit_min: Mapped[int | None] = mapped_column(Integer)
    tasks: Mapped[dict] = mapped_column(JSON, default=dict)
    array_size: Mapped[int | None] = mapped_column(Integer)
    expected_start: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Why it failed (class, summary, action, evidence), once it ended without succeeding.
    failure: Mapped[dict | None] = mapped_column(JSON)
    # How the attempt came to be: submit, retry (by policy), requeue (Slurm requeued the same job id).
    origin: Mapped[str] = mapped_column(String(16), default="submit")
    excluded_nodes: Mapped[list | None] = mapped_column(JSON)
    slurm_record: Mapped[int] = mapped_column(Integer, default=0)  # which sacct --duplicates record
    superseded: Mapped[bool] = mapped_column(
        Boolean, default=False
    )  # Slurm requeued its job: a later attempt
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)  # a retry is due then
    # When the run's declared outputs of this (ended) attempt were registered, and what was skipped.
    outputs_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    outputs_note: Mapped[str | None] = mapped_column(String(1024))
    # The Slurm cluster its job is on (job ids are unique per cluster only); NULL: the first cluster.
    cluster: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    run: Mapped[RunRow] = relationship(back_populates="attempts")
    events: Mapped[list[StateEventRow]] = relationship(
        order_by="StateEventRow.id", cascade="all, delete-orphan"
    )

    __table_args__ = (
        UniqueConstraint("run_id", "number", name="uq_attempt_number"),
        Index("ix_attempts_cluster_job_id", "cluster", "job_id"),
    )


class StateEventRow(Base):
    __tablename__ = "state_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str] = mapped_column(String(32))
    slurm_state: Mapped[str | None] = mapped_column(String(32))
    reason: Mapped[str | None] = mapped_column(String(1024))
    source: Mapped[str] = mapped_column(String(16))


class UserRow(Base):
    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    os_user: Mapped[str | None] = mapped_column(String(64))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TokenRow(Base):
    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_name: Mapped[str] = mapped_column(ForeignKey("users.name", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    prefix: Mapped[str] = mapped_column(String(16), index=True)  # shown to people; not secret
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # "api" (the API and the web UI) or "metrics" (GET /metrics and nothing else)
    scope: Mapped[str] = mapped_column(String(16), default="api", server_default="api")


class ProjectRow(Base):
    __tablename__ = "projects"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    description: Mapped[str] = mapped_column(Text, default="")
    slurm_account: Mapped[str] = mapped_column(String(64), unique=True)
    gpu_cap: Mapped[int | None] = mapped_column(Integer)
    gpu_hours_per_month: Mapped[int | None] = mapped_column(Integer)
    max_queued_jobs: Mapped[int | None] = mapped_column(Integer)


class MembershipRow(Base):
    __tablename__ = "memberships"

    project: Mapped[str] = mapped_column(ForeignKey("projects.name", ondelete="CASCADE"), primary_key=True)
    user_name: Mapped[str] = mapped_column(ForeignKey("users.name", ondelete="CASCADE"), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    gpu_cap: Mapped[int | None] = mapped_column(Integer)
    gpu_hours_per_month: Mapped[int | None] = mapped_column(Integer)
    max_queued_jobs: Mapped[int | None] = mapped_column(Integer)


class QueueRow(Base):
    __tablename__ = "queues"

    project: Mapped[str] = mapped_column(ForeignKey("projects.name", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    partition: Mapped[str] = mapped_column(String(64))
    qos: Mapped[str | None] = mapped_column(String(64))
    gpu_types: Mapped[list] = mapped_column(JSON, default=list)  # empty: any
    max_walltime_min: Mapped[int | None] = mapped_column(Integer)
    retry: Mapped[dict | None] = mapped_column(JSON)  # the queue's retry policy; None: the default
    whole_node_mem: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false()
    )  # --mem=0 (all of each node's memory) allowed
    cluster: Mapped[str | None] = mapped_column(String(64))  # whose partition; NULL: the first cluster


class SiteOptionRow(Base):
    __tablename__ = "site_options"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)


class AuditRow(Base):
    """Append-only, hash-chained: ``hash`` covers ``prev_hash`` and this event's fields."""

    __tablename__ = "audit_events"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    actor: Mapped[str] = mapped_column(String(128), index=True)
    action: Mapped[str] = mapped_column(String(64), index=True)
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[str] = mapped_column(String(128), index=True)
    project: Mapped[str | None] = mapped_column(String(64), index=True)
    source: Mapped[str | None] = mapped_column(String(128))
    before: Mapped[dict | None] = mapped_column(JSON)
    after: Mapped[dict | None] = mapped_column(JSON)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class AuditHeadRow(Base):
    """One row: the chain's last sequence number and hash. Updating it first serialises appends."""

    __tablename__ = "audit_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer)
    hash: Mapped[str] = mapped_column(String(64))


class LeaseRow(Base):
    """A named lease: who holds it until when (the periodic jobs run where the lease is held)."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class IdempotencyKeyRow(Base):
    """A client's ``Idempotency-Key`` for one submission: the same key again returns the same run."""

    __tablename__ = "idempotency_keys"

    user: Mapped[str] = mapped_column(String(128), primary_key=True)
    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    operation: Mapped[str] = mapped_column(String(96))  # run.submit, or run.rerun of <run id>
    request_sha256: Mapped[str] = mapped_column(String(64))  # of the request's canonical form
    run_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
