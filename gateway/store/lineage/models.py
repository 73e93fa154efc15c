"""ORM rows of the lineage spine: datasets and their versions, run inputs, artifacts and metrics.

A dataset version is evidence: once written it never changes (its manifest
is its identity). Links are rows that can be walked both ways: a run's
inputs name dataset versions; an artifact names the run and attempt that
wrote it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, ProjectNamedRow, UTCDateTime, utcnow


class DatasetRow(ProjectNamedRow, Base):
    __tablename__ = "datasets"

    __table_args__ = (UniqueConstraint("project", "name", name="uq_dataset_name"),)


class DatasetVersionRow(Base):
    __tablename__ = "dataset_versions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    digest: Mapped[str] = mapped_column(String(64), index=True)  # sha256 over the manifest
    kind: Mapped[str] = mapped_column(String(16))  # directory | file
    path: Mapped[str | None] = mapped_column(Text)  # where jobs read it: an absolute path on the cluster
    source_uri: Mapped[str] = mapped_column(Text)
    file_count: Mapped[int] = mapped_column(Integer)
    total_bytes: Mapped[int] = mapped_column(BigInteger)
    description: Mapped[str] = mapped_column(Text, default="")
    license: Mapped[str] = mapped_column(Text, default="")
    registered_by: Mapped[str] = mapped_column(String(128))
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("dataset_versions.id"), index=True)
    made_by_run_id: Mapped[str | None] = mapped_column(String(64), index=True)
    made_by_command: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        UniqueConstraint("dataset_id", "number", name="uq_dataset_version_number"),
        UniqueConstraint("dataset_id", "digest", name="uq_dataset_version_digest"),
    )


class DatasetFileRow(Base):
    """One line of a version's manifest."""

    __tablename__ = "dataset_files"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    version_id: Mapped[str] = mapped_column(ForeignKey("dataset_versions.id", ondelete="CASCADE"), index=True)
    path: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64), index=True)


class DatasetShareRow(Base):
    """A dataset another project may read and use in its runs (read-only)."""

    __tablename__ = "dataset_shares"

    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True)
    project: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)
    shared_by: Mapped[str] = mapped_column(String(128))
    shared_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunInputRow(Base):
    """A dataset version a run was submitted with, resolved to the path its job read."""

    __tablename__ = "run_inputs"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    ref: Mapped[str] = mapped_column(String(256))  # as the spec wrote it: name@latest, other/name@3
    version_id: Mapped[str] = mapped_column(ForeignKey("dataset_versions.id"), index=True)
    path: Mapped[str] = mapped_column(Text)
    verify: Mapped[str] = mapped_column(String(16))  # exists | digest
    env_var: Mapped[str] = mapped_column(String(128))


class ArtifactRow(Base):
    """A file an attempt wrote that the run declared as an output."""

    __tablename__ = "artifacts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"), index=True)
    path: Mapped[str] = mapped_column(Text)  # relative to the run directory
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (Index("ix_artifacts_run_path", "run_id", "path"),)


class RunMetricRow(Base):
    """A metric of a run: a summary value (step None) or one point of a series."""

    __tablename__ = "run_metrics"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    step: Mapped[int | None] = mapped_column(BigInteger)
    value: Mapped[float] = mapped_column(Float)


class TaskOutputRow(Base):
    """The mark that one array task of a sweep attempt was harvested (its metrics read, once), with
    why a metrics file was not read; the task's metrics are ``TaskMetricRow``s."""

    __tablename__ = "task_outputs"

    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True)
    task_index: Mapped[int] = mapped_column(Integer, primary_key=True)  # the Slurm array index
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    harvested_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    note: Mapped[str | None] = mapped_column(Text)


class TaskMetricRow(Base):
    """A metric of one array task: a summary value (step None) or one point of a series."""

    __tablename__ = "task_metrics"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"))
    task_index: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(128))
    step: Mapped[int | None] = mapped_column(BigInteger)
    value: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_task_metrics_attempt_task", "attempt_id", "task_index"),)
