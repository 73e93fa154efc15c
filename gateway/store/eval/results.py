"""Writing an eval result once, and reading it back as ``EvalResults``.

``ingest`` writes everything one eval run produced in one transaction: the
result, each task's aggregates and sample columns, each metric's scores,
the source files (linked to the run's artifacts), the eval run's status
and the audit event. It applies only to an eval run still pending, so a
result is written at most once and never changed; any failure leaves
nothing behind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session

from gateway.core.eval.domain import EvalResultRecord, ResultFile
from gateway.core.eval.results import EvalResults, MetricValue, TaskResult, TaskSamples
from gateway.errors import NotFound
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database, rows_matched
from gateway.store.eval.codec import decode_scores, decode_texts, encode_scores, encode_texts
from gateway.store.eval.models import (
    EvalResultFileRow,
    EvalResultRow,
    EvalResultTaskRow,
    EvalRunRow,
    EvalSampleScoresRow,
    EvalSuiteRow,
    EvalSuiteVersionRow,
)
from gateway.store.models import utcnow
from gateway.store.versioned import new_id

INSERT_TASK = insert(EvalResultTaskRow.__table__)
INSERT_SCORES = insert(EvalSampleScoresRow.__table__)
INSERT_FILE = insert(EvalResultFileRow.__table__)


class EvalResultStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def ingest(
        self, eval_run_id: str, results: EvalResults, files: Sequence[ResultFile], *, audit: AuditEntry
    ) -> str | None:
        """Store ``results`` of a pending eval run and mark it ingested; returns the result's id.

        None when the eval run is no longer pending (another ingest got there first): nothing is written.
        """
        result_id = new_id("er")
        now = utcnow()
        with self.db.session() as session:
            run = session.get(EvalRunRow, eval_run_id)
            if run is None:
                raise NotFound(f"no eval run {eval_run_id!r}")
            claimed = rows_matched(
                session.execute(
                    update(EvalRunRow)
                    .where(EvalRunRow.id == eval_run_id, EvalRunRow.status == "pending")
                    .values(status="ingested", note=None, ended_at=now)
                )
            )
            if not claimed:
                return None
            _write(session, result_id, eval_run_id, run.suite_version_id, results, files, now)
            append(session, replace(audit, target_id=result_id))
        return result_id

    def import_result(
        self,
        new: NewImport,
        results: EvalResults,
        files: Sequence[ResultFile],
        *,
        audit: AuditEntry,
    ) -> tuple[str, str]:
        """Store results made elsewhere: an eval run with no gateway run (``ingested`` at once) and its
        result, origin ``imported`` by ``new.imported_by``, in one transaction with ``audit``; returns
        (eval run id, result id)."""
        eval_run_id, result_id = new_id("ev"), new_id("er")
        now = utcnow()
        with self.db.session() as session:
            session.add(
                EvalRunRow(
                    id=eval_run_id,
                    run_id=None,
                    project=new.project,
                    suite_version_id=new.suite_version_id,
                    artifact_sha256=new.artifact_sha256,
                    artifact_path=new.artifact_path,
                    artifact_run_id=new.artifact_run_id,
                    submitted_by=new.imported_by,
                    created_at=now,
                    status="ingested",
                    note=f"imported by {new.imported_by}",
                    ended_at=now,
                )
            )
            session.flush()
            _write(
                session,
                result_id,
                eval_run_id,
                new.suite_version_id,
                results,
                files,
                now,
                origin="imported",
                imported_by=new.imported_by,
            )
            append(
                session,
                replace(audit, target_id=result_id, after=(audit.after or {}) | {"eval_run": eval_run_id}),
            )
        return eval_run_id, result_id

    def task_fingerprints(self, suite_version_id: str) -> dict[str, list[tuple[str | None, int, str]]]:
        """Per task, (task hash, documents, result id) of each result the gateway itself ran of this
        suite version (origin ``gateway``), oldest first."""
        with self.db.session() as session:
            rows = session.execute(
                select(
                    EvalResultTaskRow.task,
                    EvalResultTaskRow.task_hash,
                    EvalResultTaskRow.n_original,
                    EvalResultRow.id,
                )
                .join(EvalResultRow, EvalResultRow.id == EvalResultTaskRow.result_id)
                .where(EvalResultRow.suite_version_id == suite_version_id, EvalResultRow.origin == "gateway")
                .order_by(EvalResultRow.created_at, EvalResultRow.id)
            ).all()
        found: dict[str, list[tuple[str | None, int, str]]] = {}
        for task, task_hash, n_original, result_id in rows:
            found.setdefault(task, []).append((task_hash, n_original, result_id))
        return found

    def result(self, result_id: str, *, with_samples: bool = False) -> EvalResultRecord:
        """One result; per-sample scores only ``with_samples``. NotFound when there is none."""
        with self.db.session() as session:
            row = session.get(EvalResultRow, result_id)
            if row is None:
                raise NotFound(f"no eval result {result_id!r}")
            return _record(session, row, with_samples)


@dataclass(frozen=True)
class NewImport:
    """What an import records besides its results: where, on what artifact, by whom."""

    project: str
    suite_version_id: str
    artifact_sha256: str
    artifact_path: str
    artifact_run_id: str | None
    imported_by: str


def _write(
    session: Session,
    result_id: str,
    eval_run_id: str,
    suite_version_id: str,
    results: EvalResults,
    files: Sequence[ResultFile],
    now: datetime,
    *,
    origin: str = "gateway",
    imported_by: str | None = None,
) -> None:
    """The result row, its tasks' rows, its scores and its files."""
    session.add(
        EvalResultRow(
            id=result_id,
            eval_run_id=eval_run_id,
            suite_version_id=suite_version_id,
            harness=results.harness,
            harness_version=results.harness_version,
            seeds=dict(results.seeds),
            config=_plain(results.config),
            created_at=now,
            origin=origin,
            imported_by=imported_by,
        )
    )
    session.flush()
    connection = session.connection()
    connection.execute(
        INSERT_TASK, [_task_row(result_id, i, t) for i, t in enumerate(results.tasks.values())]
    )
    scores = [
        {"result_id": result_id, "task": t.name, "metric": metric, "scores": encode_scores(column)}
        for t in results.tasks.values()
        if t.samples is not None
        for metric, column in t.samples.scores.items()
    ]
    if scores:
        connection.execute(INSERT_SCORES, scores)
    if files:
        connection.execute(
            INSERT_FILE,
            [
                {
                    "result_id": result_id,
                    "path": f.path,
                    "role": f.role,
                    "task": f.task,
                    "sha256": f.sha256,
                    "size": f.size,
                    "artifact_id": f.artifact_id,
                }
                for f in files
            ],
        )


def _plain(value: Any) -> Any:
    """The harness's settings as JSON values (lm-eval's config may hold anything JSON can carry)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN and the infinities are not JSON
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def _task_row(result_id: str, position: int, task: TaskResult) -> dict[str, Any]:
    samples = task.samples
    return {
        "result_id": result_id,
        "task": task.name,
        "position": position,
        "version": task.version,
        "n_shot": task.n_shot,
        "task_hash": task.task_hash,
        "n_original": task.n_original,
        "n_effective": task.n_effective,
        "metrics": {m: {"value": v.value, "stderr": v.stderr} for m, v in task.metrics.items()},
        "higher_is_better": dict(task.higher_is_better),
        "unscored": list(samples.unscored) if samples is not None else [],
        "sample_count": len(samples) if samples is not None else 0,
        "sample_ids": encode_texts(samples.ids) if samples is not None else None,
        "doc_hashes": encode_texts(samples.doc_hashes) if samples is not None else None,
        "prompt_hashes": encode_texts(samples.prompt_hashes) if samples is not None else None,
        "target_hashes": encode_texts(samples.target_hashes) if samples is not None else None,
    }


def _record(session: Session, row: EvalResultRow, with_samples: bool) -> EvalResultRecord:
    run = session.get(EvalRunRow, row.eval_run_id)
    assert run is not None
    version = session.get(EvalSuiteVersionRow, row.suite_version_id)
    assert version is not None
    suite = session.get(EvalSuiteRow, version.suite_id)
    assert suite is not None
    columns: list[InstrumentedAttribute[Any]] = [
        EvalResultTaskRow.task,
        EvalResultTaskRow.version,
        EvalResultTaskRow.n_shot,
        EvalResultTaskRow.task_hash,
        EvalResultTaskRow.n_original,
        EvalResultTaskRow.n_effective,
        EvalResultTaskRow.metrics,
        EvalResultTaskRow.higher_is_better,
        EvalResultTaskRow.unscored,
        EvalResultTaskRow.sample_count,
    ]
    if with_samples:
        columns += [
            EvalResultTaskRow.sample_ids,
            EvalResultTaskRow.doc_hashes,
            EvalResultTaskRow.prompt_hashes,
            EvalResultTaskRow.target_hashes,
        ]
    tasks = session.execute(
        select(*columns).where(EvalResultTaskRow.result_id == row.id).order_by(EvalResultTaskRow.position)
    ).all()
    scores: dict[str, dict[str, bytes]] = {}
    if with_samples:
        for task, metric, blob in session.execute(
            select(EvalSampleScoresRow.task, EvalSampleScoresRow.metric, EvalSampleScoresRow.scores).where(
                EvalSampleScoresRow.result_id == row.id
            )
        ):
            scores.setdefault(task, {})[metric] = blob
    files = session.scalars(
        select(EvalResultFileRow)
        .where(EvalResultFileRow.result_id == row.id)
        .order_by(EvalResultFileRow.path)
    )
    results = EvalResults(
        harness=row.harness,
        harness_version=row.harness_version,
        seeds=dict(row.seeds),
        tasks={t.task: _task(t, scores.get(t.task, {}), with_samples) for t in tasks},
        config=dict(row.config),
    )
    return EvalResultRecord(
        id=row.id,
        eval_run_id=row.eval_run_id,
        run_id=run.run_id,
        project=run.project,
        suite_version_id=row.suite_version_id,
        suite_hash=version.content_hash,
        suite_ref=f"{suite.project}/{suite.name}@{version.number}",
        artifact_sha256=run.artifact_sha256,
        created_at=row.created_at,
        results=results,
        files=tuple(ResultFile(f.role, f.task, f.path, f.sha256, f.size, f.artifact_id) for f in files),
        sample_counts={t.task: t.sample_count for t in tasks},
        origin=row.origin,
        imported_by=row.imported_by,
    )


def _task(t: Any, scores: dict[str, bytes], with_samples: bool) -> TaskResult:
    samples = None
    if with_samples and t.sample_ids is not None:
        samples = TaskSamples(
            ids=decode_texts(t.sample_ids) or (),
            scores={m: decode_scores(blob) for m, blob in scores.items()},
            doc_hashes=decode_texts(t.doc_hashes),
            prompt_hashes=decode_texts(t.prompt_hashes),
            target_hashes=decode_texts(t.target_hashes),
            unscored=tuple(t.unscored),
        )
    return TaskResult(
        name=t.task,
        version=t.version,
        n_shot=t.n_shot,
        task_hash=t.task_hash,
        n_original=t.n_original,
        n_effective=t.n_effective,
        metrics={m: MetricValue(v["value"], v.get("stderr")) for m, v in t.metrics.items()},
        higher_is_better=dict(t.higher_is_better),
        samples=samples,
    )
