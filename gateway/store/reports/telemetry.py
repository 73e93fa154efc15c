"""The GPU telemetry side of the reports: per-attempt utilisation and idle fraction, joined to records.

An accounting record that is a gateway attempt (``attempt_id``) has telemetry when that attempt's
samples were harvested with status ``ok`` (``attempt_telemetry``, docs/telemetry.md). Its
utilisation is the mean over its GPUs' mean utilisation, weighted by each GPU's sampled duration
(``gpu_summaries``); its idle GPU-hours are the record's allocated GPU-hours (from accounting, like
every other GPU-hour in a report) x the attempt's idle fraction. Records without telemetry add
nothing here, so a report can say "no telemetry" rather than count them as idle or busy.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, func, select

from gateway.store.accounting.models import AccountingRecordRow
from gateway.store.accounting.telemetry_models import AttemptTelemetryRow, GpuSummaryRow

REC = AccountingRecordRow.__table__
TELEMETRY = AttemptTelemetryRow.__table__
GPUS = GpuSummaryRow.__table__
UTIL_BIN_PCT = 10  # the utilisation histogram's bin width


def telemetry_of_attempts() -> Any:
    """(attempt_id, util_pct, idle_fraction) of every attempt with usable telemetry, as a subquery."""
    duration = func.sum(GPUS.c.duration_s)
    util = (
        select(
            GPUS.c.attempt_id,
            (func.sum(GPUS.c.util_mean_pct * GPUS.c.duration_s) / func.nullif(duration, 0.0)).label("util"),
        )
        .where(GPUS.c.util_mean_pct.is_not(None))
        .group_by(GPUS.c.attempt_id)
        .subquery("gpu_util")
    )
    return (
        select(TELEMETRY.c.attempt_id, util.c.util, TELEMETRY.c.idle_fraction)
        .join(util, util.c.attempt_id == TELEMETRY.c.attempt_id)
        .where(TELEMETRY.c.status == "ok", TELEMETRY.c.idle_fraction.is_not(None), util.c.util.is_not(None))
        .subquery("telemetry")
    )


def with_telemetry(source: Any, telemetry: Any) -> Any:
    """``source`` (the records, joined as a dimension needs) with each record's telemetry, if any."""
    return source.outerjoin(telemetry, telemetry.c.attempt_id == REC.c.attempt_id)


def telemetry_measures(telemetry: Any) -> list[Any]:
    """The sums ``core.reports.Sums`` names telemetry_gpu_hours, util_gpu_hours and idle_gpu_hours."""
    has = telemetry.c.attempt_id.is_not(None)
    hours = REC.c.gpu_hours
    return [
        func.sum(case((has, hours), else_=0.0)).label("telemetry_gpu_hours"),
        func.sum(case((has, hours * telemetry.c.util), else_=0.0)).label("util_gpu_hours"),
        func.sum(case((has, hours * telemetry.c.idle_fraction), else_=0.0)).label("idle_gpu_hours"),
    ]


def utilisation_bins(telemetry: Any, conds: list[Any]) -> Any:
    """GPU-hours per utilisation bin (0 for 0-10 %, ... 9 for 90-100 %) of records with telemetry."""
    # + 1e-9: a weighted mean of 40 % may come out as 39.999999999 (PostgreSQL did), still bin 4
    bin_no = func.floor(telemetry.c.util / UTIL_BIN_PCT + 1e-9)
    return (
        select(bin_no.label("bin"), func.sum(REC.c.gpu_hours).label("gpu_hours"))
        .select_from(REC.join(telemetry, telemetry.c.attempt_id == REC.c.attempt_id))
        .where(*conds, REC.c.gpu_hours > 0)
        .group_by(bin_no)
    )
