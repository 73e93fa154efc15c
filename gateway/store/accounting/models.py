"""ORM rows of accounting: sacct records (allocations and their steps) and rate table versions.

One ``accounting_records`` row per slurmdbd allocation record, unique on
slurmdbd's own identity (cluster, JobIDRaw, Submit: see
``gateway.core.accounting.records``), so a re-read updates in place and never adds.
Its steps are ``accounting_steps`` rows, replaced with the record. Derived
numbers (GPU-hours, core-hours, cost) are stored so that reports are one
``GROUP BY``. ``rate_versions`` keeps every rate table ever applied; a
priced record names the version that priced it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, UTCDateTime, utcnow


class AccountingRecordRow(Base):
    __tablename__ = "accounting_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # identity (uq_accounting_record)
    cluster: Mapped[str] = mapped_column(String(64))
    job_id_raw: Mapped[str] = mapped_column(String(32))
    submit_time: Mapped[datetime] = mapped_column(UTCDateTime)
    db_index: Mapped[int | None] = mapped_column(BigInteger)
    job_id: Mapped[str] = mapped_column(String(64), index=True)  # "123", "123_4"
    array_job_id: Mapped[str | None] = mapped_column(String(32))
    array_task_id: Mapped[str | None] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(Text, default="")
    user_name: Mapped[str] = mapped_column(String(64), index=True)  # the Slurm user
    account: Mapped[str | None] = mapped_column(String(64), index=True)
    partition: Mapped[str | None] = mapped_column(String(64))
    qos: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(32))
    cancelled_by_uid: Mapped[int | None] = mapped_column(Integer)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    exit_signal: Mapped[int | None] = mapped_column(Integer)
    eligible_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    start_time: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    end_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    elapsed_s: Mapped[int] = mapped_column(Integer, default=0)
    timelimit_min: Mapped[int | None] = mapped_column(Integer)
    alloc_cpus: Mapped[int] = mapped_column(Integer, default=0)
    alloc_mem_mb: Mapped[int] = mapped_column(BigInteger, default=0)
    alloc_gpus: Mapped[int] = mapped_column(Integer, default=0)
    gpu_type: Mapped[str | None] = mapped_column(String(64))
    alloc_nodes: Mapped[int] = mapped_column(Integer, default=0)
    alloc_billing: Mapped[int] = mapped_column(Integer, default=0)
    req_cpus: Mapped[int] = mapped_column(Integer, default=0)
    req_mem_mb: Mapped[int] = mapped_column(BigInteger, default=0)
    req_gpus: Mapped[int] = mapped_column(Integer, default=0)
    req_nodes: Mapped[int] = mapped_column(Integer, default=0)
    alloc_tres: Mapped[str] = mapped_column(Text, default="")
    req_tres: Mapped[str] = mapped_column(Text, default="")
    node_list: Mapped[str | None] = mapped_column(Text)
    comment: Mapped[str | None] = mapped_column(Text)
    max_rss_kb: Mapped[int | None] = mapped_column(BigInteger)
    ended: Mapped[bool] = mapped_column(Boolean, default=False)
    failed: Mapped[bool] = mapped_column(Boolean, default=False)
    gpu_hours: Mapped[float] = mapped_column(Float, default=0.0)
    cpu_hours: Mapped[float] = mapped_column(Float, default=0.0)
    # attribution
    run_id: Mapped[str | None] = mapped_column(String(64), index=True)
    attempt_id: Mapped[int | None] = mapped_column(ForeignKey("attempts.id", ondelete="SET NULL"), index=True)
    attempt_number: Mapped[int | None] = mapped_column(Integer)
    project: Mapped[str | None] = mapped_column(String(64), index=True)
    # price (None until a rate table exists)
    rate_version: Mapped[int | None] = mapped_column(ForeignKey("rate_versions.version"), index=True)
    currency: Mapped[str | None] = mapped_column(String(8))
    cost: Mapped[float | None] = mapped_column(Float)
    cost_parts: Mapped[list | None] = mapped_column(JSON)
    cost_note: Mapped[str | None] = mapped_column(String(256))
    first_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        UniqueConstraint("cluster", "job_id_raw", "submit_time", name="uq_accounting_record"),
        Index("ix_accounting_records_job_raw", "job_id_raw"),
    )


class AccountingStepRow(Base):
    __tablename__ = "accounting_steps"

    record_id: Mapped[int] = mapped_column(
        ForeignKey("accounting_records.id", ondelete="CASCADE"), primary_key=True
    )
    step: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(32))
    exit_code: Mapped[int | None] = mapped_column(Integer)
    exit_signal: Mapped[int | None] = mapped_column(Integer)
    start_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    end_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    elapsed_s: Mapped[int] = mapped_column(Integer, default=0)
    node_list: Mapped[str | None] = mapped_column(Text)
    max_rss_kb: Mapped[int | None] = mapped_column(BigInteger)
    tres_usage_in_max: Mapped[str | None] = mapped_column(Text)


class RateVersionRow(Base):
    """One applied rate table; never changed once written (a new apply that differs adds one)."""

    __tablename__ = "rate_versions"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    currency: Mapped[str] = mapped_column(String(8))
    rates: Mapped[dict] = mapped_column(JSON)  # the table as applied: {"rates": [...], "charge": {...}}
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    applied_by: Mapped[str] = mapped_column(String(128))
    applied_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
