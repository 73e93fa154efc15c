"""ORM rows of GPU telemetry: one row per harvested attempt, one per GPU it sampled (docs/telemetry.md).

Written once, when the attempt's samples are harvested (``gateway/services/accounting/telemetry.py``); the
per-GPU row keeps a thinned series (at most ``core.telemetry.MAX_SERIES_POINTS`` points) for plots.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, UTCDateTime, utcnow


class AttemptTelemetryRow(Base):
    __tablename__ = "attempt_telemetry"

    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(64), index=True)
    # the Slurm cluster the attempt ran on (None: harvested before clusters existed: the first one)
    cluster: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))  # core.telemetry.STATUSES
    note: Mapped[str | None] = mapped_column(String(1024))
    gpus_sampled: Mapped[int] = mapped_column(Integer, default=0)
    idle_threshold_pct: Mapped[float] = mapped_column(Float)
    allocated_gpu_hours: Mapped[float | None] = mapped_column(Float)
    idle_fraction: Mapped[float | None] = mapped_column(Float)
    idle_gpu_hours: Mapped[float | None] = mapped_column(Float)
    energy_wh: Mapped[float | None] = mapped_column(Float)
    harvested_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class GpuSummaryRow(Base):
    __tablename__ = "gpu_summaries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    attempt_id: Mapped[int] = mapped_column(
        ForeignKey("attempt_telemetry.attempt_id", ondelete="CASCADE"), index=True
    )
    node: Mapped[str] = mapped_column(String(128))
    gpu_index: Mapped[int] = mapped_column(Integer)
    uuid: Mapped[str] = mapped_column(String(96))
    name: Mapped[str] = mapped_column(String(96))
    samples: Mapped[int] = mapped_column(Integer)
    duration_s: Mapped[float] = mapped_column(Float)
    util_mean_pct: Mapped[float | None] = mapped_column(Float)
    util_max_pct: Mapped[float | None] = mapped_column(Float)
    idle_fraction: Mapped[float | None] = mapped_column(Float)
    mem_peak_mib: Mapped[float | None] = mapped_column(Float)
    mem_total_mib: Mapped[float | None] = mapped_column(Float)
    energy_wh: Mapped[float | None] = mapped_column(Float)
    power_mean_w: Mapped[float | None] = mapped_column(Float)
    temp_max_c: Mapped[float | None] = mapped_column(Float)
    series: Mapped[list] = mapped_column(JSON, default=list)  # [t_s, util_pct, mem_used_mib, power_w]
