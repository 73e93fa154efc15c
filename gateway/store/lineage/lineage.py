"""Reading and writing the links of the lineage spine: run inputs, artifacts and metrics.

Every method opens one unit of work and returns domain values. Outputs of an
attempt are recorded in one transaction: its new artifacts, the run's
metrics (replaced by this attempt's) and the mark that it was harvested.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import aliased

from gateway.core.lineage.values import Artifact, RunInput
from gateway.core.slurm.states import TERMINAL
from gateway.store.db import Database, rows_matched
from gateway.store.lineage.datasets import to_version
from gateway.store.lineage.models import ArtifactRow, DatasetRow, DatasetVersionRow, RunInputRow, RunMetricRow
from gateway.store.lineage.task_metrics import ended_tasks
from gateway.store.models import AttemptRow, RunRow, utcnow

TERMINAL_STATES = sorted(s.value for s in TERMINAL)
INSERT_ARTIFACT = insert(ArtifactRow.__table__)
INSERT_METRIC = insert(RunMetricRow.__table__)


@dataclass(frozen=True)
class HarvestJob:
    """An ended attempt whose run's declared outputs have not been registered yet."""

    run_id: str
    attempt_id: int
    attempt_number: int
    run_dir: str
    outputs: list[str]
    metrics: list[str]
    started: bool  # the job ran (a never-submitted or never-started attempt wrote nothing)
    submitter: str = ""
    os_user: str | None = None  # the OS user the job ran as (None: a run from before it was recorded)
    # the variables of the run's site and project secrets (docs/access.md#site-and-project-secrets)
    held_secrets: tuple[str, ...] = ()
    final: bool = False  # the run's latest attempt, with no retry scheduled: nothing runs after it
    sweep: bool = False  # an array of param sets: each task also writes under tasks/<index>/
    tasks_ended: tuple[int, ...] = ()  # a sweep's tasks Slurm reported ended (their metrics: task_metrics)


class LineageStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- inputs -----------------------------------------------------------------------------

    def inputs(self, run_id: str) -> list[RunInput]:
        """The dataset versions the run reads, in the spec's order; empty for an unknown run."""
        with self.db.session() as session:
            rows = session.execute(
                select(RunInputRow, DatasetVersionRow, DatasetRow)
                .join(DatasetVersionRow, DatasetVersionRow.id == RunInputRow.version_id)
                .join(DatasetRow, DatasetRow.id == DatasetVersionRow.dataset_id)
                .where(RunInputRow.run_id == run_id)
                .order_by(RunInputRow.position)
            ).all()
            return [
                RunInput(
                    position=i.position,
                    ref=i.ref,
                    version=to_version(v, d),
                    path=i.path,
                    verify=i.verify,
                    env_var=i.env_var,
                )
                for i, v, d in rows
            ]

    def runs_using(self, version_id: str, limit: int = 500) -> list[tuple[str, str]]:
        """(run id, project) of runs that read this dataset version, oldest first."""
        with self.db.session() as session:
            rows = session.execute(
                select(RunRow.id, RunRow.project)
                .join(RunInputRow, RunInputRow.run_id == RunRow.id)
                .where(RunInputRow.version_id == version_id)
                .order_by(RunRow.created_at, RunRow.id)
                .limit(limit)
            )
            return [(run_id, project) for run_id, project in rows]

    # -- outputs ----------------------------------------------------------------------------

    def artifacts(self, run_id: str) -> list[Artifact]:
        """The run's artifacts, by path (then as recorded), each with its attempt's number."""
        with self.db.session() as session:
            rows = session.execute(
                select(ArtifactRow, AttemptRow.number)
                .join(AttemptRow, AttemptRow.id == ArtifactRow.attempt_id)
                .where(ArtifactRow.run_id == run_id)
                .order_by(ArtifactRow.path, ArtifactRow.id)
            ).all()
            return [_artifact(a, n) for a, n in rows]

    def artifacts_by_sha256(self, sha256: str, limit: int = 100) -> list[Artifact]:
        """Artifacts of any run with this content (hex sha256), oldest first, at most ``limit``."""
        with self.db.session() as session:
            rows = session.execute(
                select(ArtifactRow, AttemptRow.number)
                .join(AttemptRow, AttemptRow.id == ArtifactRow.attempt_id)
                .where(ArtifactRow.sha256 == sha256)
                .order_by(ArtifactRow.id)
                .limit(limit)
            ).all()
            return [_artifact(a, n) for a, n in rows]

    def metrics(self, run_id: str) -> tuple[dict[str, float], dict[str, list[tuple[int | None, float]]]]:
        """The run's summary metrics and its per-step series (by metric name, in step order)."""
        summary: dict[str, float] = {}
        series: dict[str, list[tuple[int | None, float]]] = {}
        with self.db.session() as session:
            rows = session.execute(
                select(RunMetricRow.name, RunMetricRow.step, RunMetricRow.value)
                .where(RunMetricRow.run_id == run_id)
                .order_by(RunMetricRow.id)
            )
            for name, step, value in rows:
                if step is None:
                    summary[name] = value
                else:
                    series.setdefault(name, []).append((step, value))
        return summary, series

    def harvests(self, run_id: str) -> list[tuple[int, Any, str | None]]:
        """(attempt number, when its outputs were harvested or None, note) for each attempt."""
        with self.db.session() as session:
            rows = session.execute(
                select(AttemptRow.number, AttemptRow.outputs_at, AttemptRow.outputs_note)
                .where(AttemptRow.run_id == run_id)
                .order_by(AttemptRow.number)
            )
            return [(n, at, note) for n, at, note in rows]

    def due_harvest(self, limit: int = 50) -> list[HarvestJob]:
        """Ended attempts not harvested yet, oldest first."""
        later = aliased(AttemptRow)
        latest = select(func.max(later.number)).where(later.run_id == AttemptRow.run_id).scalar_subquery()
        with self.db.session() as session:
            rows = session.execute(
                select(
                    AttemptRow.id,
                    AttemptRow.number,
                    AttemptRow.start_time,
                    RunRow.id,
                    RunRow.run_dir,
                    RunRow.spec,
                    RunRow.submitter,
                    RunRow.os_user,
                    AttemptRow.retry_at,
                    latest,
                    AttemptRow.tasks,
                )
                .join(RunRow, RunRow.id == AttemptRow.run_id)
                .where(AttemptRow.outputs_at.is_(None), AttemptRow.state.in_(TERMINAL_STATES))
                .order_by(AttemptRow.id)
                .limit(limit)
            ).all()
            return [
                HarvestJob(
                    run_id=run_id,
                    attempt_id=attempt_id,
                    attempt_number=number,
                    run_dir=run_dir,
                    outputs=list(spec.get("outputs") or []),
                    metrics=list(spec.get("metrics") or []),
                    started=start is not None,
                    submitter=submitter,
                    os_user=os_user,
                    held_secrets=tuple(
                        sorted(
                            var
                            for var, ref in (spec.get("secrets") or {}).items()
                            if isinstance(ref, dict) and (ref.get("site") or ref.get("project"))
                        )
                    ),
                    final=retry_at is None and number == last,
                    sweep=bool(spec.get("sweep")),
                    tasks_ended=tuple(sorted(ended_tasks(tasks or {}))),
                )
                for (
                    attempt_id,
                    number,
                    start,
                    run_id,
                    run_dir,
                    spec,
                    submitter,
                    os_user,
                    retry_at,
                    last,
                    tasks,
                ) in rows
            ]

    def known_files(self, run_id: str) -> set[tuple[str, str]]:
        """(path, sha256) of the run's artifacts so far: a file an earlier attempt wrote is not new."""
        with self.db.session() as session:
            rows = session.execute(
                select(ArtifactRow.path, ArtifactRow.sha256).where(ArtifactRow.run_id == run_id)
            )
            return {(p, s) for p, s in rows}

    def record_outputs(
        self,
        job: HarvestJob,
        *,
        files: Iterable[tuple[str, int, str]],
        summary: dict[str, float] | None,
        series: Mapping[str, Sequence[tuple[int | None, float]]] | None,
        note: str | None,
    ) -> None:
        """Write an attempt's new artifacts (path, size, sha256) and metrics; mark it harvested.

        Metrics found (``summary`` or ``series`` not None) replace the run's
        earlier ones: a run's metrics are its latest attempt's.
        """
        now = utcnow()
        rows: list[dict[str, Any]] = [
            {
                "run_id": job.run_id,
                "attempt_id": job.attempt_id,
                "path": p,
                "size": n,
                "sha256": s,
                "created_at": now,
            }
            for p, n, s in files
        ]
        with self.db.session() as session:
            claimed = rows_matched(
                session.execute(
                    update(AttemptRow)
                    .where(AttemptRow.id == job.attempt_id, AttemptRow.outputs_at.is_(None))
                    .values(outputs_at=now, outputs_note=(note or None) and note[:1024])
                )
            )
            if not claimed:
                return  # another harvester got here first
            connection = session.connection()
            if rows:
                connection.execute(INSERT_ARTIFACT, rows)
            if summary is not None or series is not None:
                connection.execute(delete(RunMetricRow).where(RunMetricRow.run_id == job.run_id))
                points = [
                    {"run_id": job.run_id, "attempt_id": job.attempt_id, "name": k, "step": None, "value": v}
                    for k, v in (summary or {}).items()
                ]
                points += [
                    {"run_id": job.run_id, "attempt_id": job.attempt_id, "name": k, "step": step, "value": v}
                    for k, values in (series or {}).items()
                    for step, v in values
                ]
                if points:
                    connection.execute(INSERT_METRIC, points)


def _artifact(row: ArtifactRow, attempt_number: int) -> Artifact:
    return Artifact(
        id=row.id,
        run_id=row.run_id,
        attempt_id=row.attempt_id,
        attempt_number=attempt_number,
        path=row.path,
        size_bytes=row.size,
        sha256=row.sha256,
        created_at=row.created_at,
    )
