"""ORM rows of training environments: an environment, its immutable versions, and what each job
that used one found at its start (docs/environments.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, ProjectNamedRow, UTCDateTime, utcnow


class EnvironmentRow(ProjectNamedRow, Base):
    __tablename__ = "environments"

    __table_args__ = (UniqueConstraint("project", "name", name="uq_environment_name"),)


class EnvVersionRow(Base):
    """A version: its content never changes; a python version's status moves once, from building."""

    __tablename__ = "environment_versions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    environment_id: Mapped[str] = mapped_column(ForeignKey("environments.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))  # python | image | modules
    digest: Mapped[str] = mapped_column(String(64), index=True)
    content: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))  # building | ready | failed
    location: Mapped[str | None] = mapped_column(Text)
    packages: Mapped[dict] = mapped_column(JSON, default=dict)  # name -> version
    packages_sha256: Mapped[str | None] = mapped_column(String(64))
    build_run_id: Mapped[str | None] = mapped_column(String(64), index=True)
    failure: Mapped[str | None] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text, default="")
    registered_by: Mapped[str] = mapped_column(String(128))
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("environment_versions.id"), index=True)
    parent_diff: Mapped[dict | None] = mapped_column(JSON)
    # a python version's builds: how many were asked for, when the current one was, and why each
    # earlier one failed (``{"attempt", "failure", "build_run_id"}``, oldest first; migration 0023)
    build_attempts: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    build_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    build_failures: Mapped[list | None] = mapped_column(JSON)

    __table_args__ = (
        UniqueConstraint("environment_id", "number", name="uq_environment_version_number"),
        UniqueConstraint("environment_id", "digest", name="uq_environment_version_digest"),
    )


class EnvObservationRow(Base):
    """What one job of a run found at its start: the image id the runtime reported, the venv's
    installed set; and how that differs from the version the run named."""

    __tablename__ = "environment_observations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    job_id: Mapped[str] = mapped_column(String(64))
    version_id: Mapped[str] = mapped_column(ForeignKey("environment_versions.id"), index=True)
    observed: Mapped[dict] = mapped_column(JSON)
    drift: Mapped[dict | None] = mapped_column(JSON)  # None: it ran what was recorded
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (UniqueConstraint("run_id", "job_id", name="uq_environment_observation_job"),)
