"""GPU telemetry in the database: an attempt's summary and its GPUs' rows, written once per attempt."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import select

from gateway.core.accounting.telemetry import (
    AttemptGpuFacts,
    AttemptTelemetry,
    GpuSummary,
    StoredTelemetry,
    allocated_gpu_hours,
    requested_gpus,
)
from gateway.store.accounting.telemetry_models import AttemptTelemetryRow, GpuSummaryRow
from gateway.store.db import Database
from gateway.store.models import AttemptRow, RunRow


class TelemetryStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def facts(self, attempt_id: int) -> AttemptGpuFacts | None:
        """An attempt's job id and the GPU-hours it held; None for an unknown attempt, or one that
        neither held nor asked for a GPU."""
        with self.db.session() as session:
            row = session.get(AttemptRow, attempt_id)
            if row is None:
                return None
            resources = dict((session.get_one(RunRow, row.run_id).spec or {}).get("resources") or {})
            elapsed = row.elapsed_s
            if elapsed is None and row.start_time and row.end_time:
                elapsed = int((row.end_time - row.start_time).total_seconds())
            tres = dict(row.alloc_tres or {})
            hours = allocated_gpu_hours(tres, elapsed, dict(row.tasks or {}), resources)
            if hours is None and not requested_gpus(resources) and not tres.get("gres/gpu"):
                return None
            return AttemptGpuFacts(job_id=row.job_id, allocated_gpu_hours=hours, cluster=row.cluster)

    def record(
        self,
        attempt_id: int,
        run_id: str,
        telemetry: AttemptTelemetry,
        *,
        idle_threshold_pct: float,
        cluster: str | None = None,
    ) -> bool:
        """Store an attempt's telemetry, sampled on ``cluster``; False (nothing written) when it is
        stored already."""
        with self.db.session() as session:
            if session.get(AttemptTelemetryRow, attempt_id) is not None:
                return False
            session.add(
                AttemptTelemetryRow(
                    attempt_id=attempt_id,
                    run_id=run_id,
                    cluster=cluster,
                    status=telemetry.status,
                    note=telemetry.note,
                    gpus_sampled=sum(1 for g in telemetry.gpus if g.samples),
                    idle_threshold_pct=idle_threshold_pct,
                    allocated_gpu_hours=telemetry.allocated_gpu_hours,
                    idle_fraction=telemetry.idle_fraction,
                    idle_gpu_hours=telemetry.idle_gpu_hours,
                    energy_wh=telemetry.energy_wh,
                )
            )
            session.flush()
            session.add_all(GpuSummaryRow(attempt_id=attempt_id, **asdict(g)) for g in telemetry.gpus)
        return True

    def for_run(self, run_id: str) -> list[StoredTelemetry]:
        """The run's harvested attempts' telemetry, by attempt number; empty when none."""
        with self.db.session() as session:
            rows = session.execute(
                select(AttemptTelemetryRow, AttemptRow.number, AttemptRow.job_id)
                .join(AttemptRow, AttemptRow.id == AttemptTelemetryRow.attempt_id)
                .where(AttemptTelemetryRow.run_id == run_id)
                .order_by(AttemptRow.number)
            ).all()
            ids = [row.attempt_id for row, _, _ in rows]
            gpus: dict[int, list[GpuSummary]] = {i: [] for i in ids}
            for g in session.scalars(
                select(GpuSummaryRow)
                .where(GpuSummaryRow.attempt_id.in_(ids))
                .order_by(GpuSummaryRow.node, GpuSummaryRow.gpu_index)
            ):
                gpus[g.attempt_id].append(_gpu(g))
            return [
                StoredTelemetry(
                    attempt=number,
                    job_id=job_id,
                    idle_threshold_pct=row.idle_threshold_pct,
                    harvested_at=row.harvested_at.isoformat(),
                    cluster=row.cluster,
                    telemetry=AttemptTelemetry(
                        status=row.status,
                        note=row.note,
                        gpus=gpus[row.attempt_id],
                        allocated_gpu_hours=row.allocated_gpu_hours,
                        idle_fraction=row.idle_fraction,
                        idle_gpu_hours=row.idle_gpu_hours,
                        energy_wh=row.energy_wh,
                    ),
                )
                for row, number, job_id in rows
            ]


def _gpu(row: GpuSummaryRow) -> GpuSummary:
    return GpuSummary(
        node=row.node,
        gpu_index=row.gpu_index,
        uuid=row.uuid,
        name=row.name,
        samples=row.samples,
        duration_s=row.duration_s,
        util_mean_pct=row.util_mean_pct,
        util_max_pct=row.util_max_pct,
        idle_fraction=row.idle_fraction,
        mem_peak_mib=row.mem_peak_mib,
        mem_total_mib=row.mem_total_mib,
        energy_wh=row.energy_wh,
        power_mean_w=row.power_mean_w,
        temp_max_c=row.temp_max_c,
        series=list(row.series or []),
    )
