"""Retention rows: holds, deletions (intent first, then done), measured run-directory sizes and
their history, and members who left a project (docs/retention.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, UTCDateTime, utcnow


class HoldRow(Base):
    __tablename__ = "retention_holds"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    target_type: Mapped[str] = mapped_column(String(16))  # run | model | project
    target_id: Mapped[str] = mapped_column(String(160), index=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    reason: Mapped[str] = mapped_column(Text)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lifted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    lifted_by: Mapped[str | None] = mapped_column(String(128))
    lift_reason: Mapped[str | None] = mapped_column(Text)


class DeletionRow(Base):
    """One deletion a sweep decided: written (state ``intent``, with the size and digest measured)
    before anything is deleted, then ``done`` (with its audit event) or ``failed``."""

    __tablename__ = "retention_deletions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    rule: Mapped[str] = mapped_column(String(32))
    rel_path: Mapped[str] = mapped_column(Text)  # relative to run_dir; "." is the directory
    kind: Mapped[str] = mapped_column(String(8))  # file | dir
    run_dir: Mapped[str] = mapped_column(String(1024))
    os_user: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    files: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), index=True)  # intent | done | failed
    sweep_id: Mapped[str] = mapped_column(String(64), index=True)
    planned_at: Mapped[datetime] = mapped_column(UTCDateTime)
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    note: Mapped[str | None] = mapped_column(Text)  # why it failed, or that a later pass finished it


class RunStorageRow(Base):
    """The last measured size of a run directory (cached: measured on the run host by a sweep)."""

    __tablename__ = "run_storage"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    submitter: Mapped[str] = mapped_column(String(128), index=True)
    run_dir: Mapped[str] = mapped_column(String(1024))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    files: Mapped[int] = mapped_column(Integer)
    freeable_bytes: Mapped[int] = mapped_column(BigInteger, default=0)  # what the next sweep would free
    measured_at: Mapped[datetime] = mapped_column(UTCDateTime)
    error: Mapped[str | None] = mapped_column(Text)


class StorageSampleRow(Base):
    """A project's total run-directory bytes at one measurement: growth over time."""

    __tablename__ = "storage_samples"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    runs: Mapped[int] = mapped_column(Integer)


class DepartureRow(Base):
    """A user who left a project (a site apply removed the membership), and what became of their runs'
    files by the project's ``on_member_leave``."""

    __tablename__ = "retention_departures"

    project: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_name: Mapped[str] = mapped_column(String(64), primary_key=True)
    left_at: Mapped[datetime] = mapped_column(UTCDateTime)
    action: Mapped[str] = mapped_column(String(16))  # keep | lead | expire
    steward: Mapped[str | None] = mapped_column(String(64))  # the lead who answers for them (lead)
