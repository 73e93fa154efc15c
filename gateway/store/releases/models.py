"""ORM rows of the model registry: models, releases, their status events, alias moves, policies, promotions.

Evidence is written once: a release (its artifact and snapshot), a status
event, an alias move, a promotion decision. Only two things are ever
updated: an alias policy (each change is audited with before and after) and
a promotion request's status (open until decided, then promoted or
cancelled). An alias's position is never stored: it is its newest move, so
history at any past time is one indexed query.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, ProjectNamedRow, UTCDateTime, utcnow


class ModelRow(ProjectNamedRow, Base):
    __tablename__ = "models"

    __table_args__ = (UniqueConstraint("project", "name", name="uq_model_name"),)


class ReleaseRow(Base):
    __tablename__ = "releases"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    artifact_sha256: Mapped[str] = mapped_column(String(64), index=True)
    artifact_path: Mapped[str] = mapped_column(Text)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)
    notes: Mapped[str] = mapped_column(Text, default="")
    snapshot: Mapped[dict] = mapped_column(JSON)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (UniqueConstraint("model_id", "version", name="uq_release_version"),)


class ReleaseStatusRow(Base):
    __tablename__ = "release_status_events"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    release_id: Mapped[str] = mapped_column(ForeignKey("releases.id"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(128))
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AliasEventRow(Base):
    """One move of an alias; (model, alias, seq) is unique, so two moves racing cannot both land."""

    __tablename__ = "alias_events"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id"), index=True)
    alias: Mapped[str] = mapped_column(String(32))
    seq: Mapped[int] = mapped_column(Integer)
    from_release: Mapped[str | None] = mapped_column(String(64))
    to_release: Mapped[str | None] = mapped_column(ForeignKey("releases.id"), index=True)
    actor: Mapped[str] = mapped_column(String(128))
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    request_id: Mapped[str | None] = mapped_column(String(64))
    approvals: Mapped[list] = mapped_column(JSON)
    gate_id: Mapped[str | None] = mapped_column(String(64))
    override: Mapped[bool] = mapped_column(Boolean, default=False)
    policy: Mapped[dict | None] = mapped_column(JSON)

    __table_args__ = (UniqueConstraint("model_id", "alias", "seq", name="uq_alias_event_seq"),)


class AliasPolicyRow(Base):
    """A protection policy; ``scope`` is the model's id, or ``*`` for the project's default."""

    __tablename__ = "alias_policies"

    project: Mapped[str] = mapped_column(String(64), primary_key=True)
    scope: Mapped[str] = mapped_column(String(64), primary_key=True)
    alias: Mapped[str] = mapped_column(String(32), primary_key=True)
    roles: Mapped[list] = mapped_column(JSON)
    approvals: Mapped[int] = mapped_column(Integer)
    gate_suite: Mapped[str | None] = mapped_column(String(160))
    gate_version: Mapped[str | None] = mapped_column(String(16))  # "N" or "latest"; NULL: latest
    gate_baseline: Mapped[str | None] = mapped_column(String(32))  # an alias; NULL: the policy's own
    # whether the gateway's gate may count an eval result imported from outside (origin 'imported')
    allow_imported_results: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # the least OSV severity of a known advisory in the release's training environment that refuses a
    # move (LOW, MODERATE, HIGH, CRITICAL); NULL: the policy has no advisory rule
    advisory_severity: Mapped[str | None] = mapped_column(String(16))
    updated_by: Mapped[str] = mapped_column(String(128))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PromotionRequestRow(Base):
    __tablename__ = "promotion_requests"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id"), index=True)
    alias: Mapped[str] = mapped_column(String(32))
    release_id: Mapped[str] = mapped_column(ForeignKey("releases.id"), index=True)
    requested_by: Mapped[str] = mapped_column(String(128))
    reason: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    status: Mapped[str] = mapped_column(String(16), index=True)


class PromotionDecisionRow(Base):
    __tablename__ = "promotion_decisions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    request_id: Mapped[str] = mapped_column(ForeignKey("promotion_requests.id"), index=True)
    decision: Mapped[str] = mapped_column(String(16))
    decider: Mapped[str] = mapped_column(String(128))
    note: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
