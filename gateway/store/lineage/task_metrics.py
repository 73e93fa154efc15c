"""A sweep's array tasks' metrics, as the harvest recorded them when each task ended.

A task is harvested once per attempt: its ``task_outputs`` row (with why a
metrics file was not read) and its ``task_metrics`` rows (a summary value has
step None, a series point its step) are written together, in one
transaction, and a task already recorded is skipped, so a harvest that runs
twice (a crash between, or the attempt's own harvest after the live one)
records nothing twice. Reading a 200-task sweep's metrics is one query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, select

from gateway.core.slurm.states import LIVE, TERMINAL
from gateway.store.db import Database
from gateway.store.lineage.models import TaskMetricRow, TaskOutputRow
from gateway.store.models import AttemptRow, RunRow, utcnow

ENDED = frozenset(s.value for s in TERMINAL)
LIVE_STATES = sorted(s.value for s in LIVE)
INSERT_TASK_OUTPUT = insert(TaskOutputRow.__table__)
INSERT_TASK_METRIC = insert(TaskMetricRow.__table__)
Series = dict[str, list[tuple[int | None, float]]]


@dataclass(frozen=True)
class TaskResult:
    """What one task's metrics files held when it was harvested."""

    summary: dict[str, float] = field(default_factory=dict)
    series: Series = field(default_factory=dict)
    note: str | None = None  # why a metrics file was not read, ...


@dataclass(frozen=True)
class LiveSweep:
    """A sweep attempt still running whose ended tasks wait for their metrics to be read."""

    run_id: str
    attempt_id: int
    run_dir: str
    metrics: list[str]  # the spec's metrics files, relative to each task's directory
    submitter: str
    os_user: str | None
    ended: list[int]  # ended tasks not harvested yet, in index order


def ended_tasks(tasks: Mapping[str, Mapping[str, Any]]) -> set[int]:
    """The array indices Slurm reported ended, from an attempt's ``tasks``."""
    return {int(k) for k, t in tasks.items() if k.isdigit() and t.get("state") in ENDED}


class TaskMetricsStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def live_sweeps(self, limit: int = 50) -> list[LiveSweep]:
        """Live sweep attempts with metrics files whose ended tasks were not all harvested.

        Only live array attempts are read, so the cost follows the work in flight, not the
        database's history (an ended attempt's tasks are harvested with its own outputs)."""
        with self.db.session() as session:
            rows = session.execute(
                select(
                    AttemptRow.id,
                    AttemptRow.tasks,
                    RunRow.id,
                    RunRow.run_dir,
                    RunRow.spec,
                    RunRow.submitter,
                    RunRow.os_user,
                )
                .join(RunRow, RunRow.id == AttemptRow.run_id)
                .where(AttemptRow.array_size.is_not(None), AttemptRow.state.in_(LIVE_STATES))
                .order_by(AttemptRow.id)
            ).all()
            candidates = [
                (attempt_id, ended_tasks(tasks or {}), run_id, run_dir, spec, submitter, os_user)
                for attempt_id, tasks, run_id, run_dir, spec, submitter, os_user in rows
                if (spec or {}).get("metrics")
            ]
            candidates = [c for c in candidates if c[1]]
            done = self._harvested(session, [c[0] for c in candidates])
        due = []
        for attempt_id, ended, run_id, run_dir, spec, submitter, os_user in candidates:
            todo = sorted(ended - done.get(attempt_id, set()))
            if todo:
                due.append(
                    LiveSweep(run_id, attempt_id, run_dir, list(spec["metrics"]), submitter, os_user, todo)
                )
        return due[:limit]

    def harvested(self, attempt_id: int) -> set[int]:
        """The attempt's tasks already harvested."""
        with self.db.session() as session:
            return self._harvested(session, [attempt_id]).get(attempt_id, set())

    @staticmethod
    def _harvested(session: Any, attempt_ids: list[int]) -> dict[int, set[int]]:
        if not attempt_ids:
            return {}
        done: dict[int, set[int]] = {}
        rows = session.execute(
            select(TaskOutputRow.attempt_id, TaskOutputRow.task_index).where(
                TaskOutputRow.attempt_id.in_(attempt_ids)
            )
        )
        for attempt_id, index in rows:
            done.setdefault(attempt_id, set()).add(index)
        return done

    def record(self, run_id: str, attempt_id: int, results: Mapping[int, TaskResult]) -> int:
        """Record each task's metrics, skipping tasks already recorded; returns how many were new."""
        now = utcnow()
        with self.db.session() as session:
            done = self._harvested(session, [attempt_id]).get(attempt_id, set())
            new = {i: r for i, r in results.items() if i not in done}
            if not new:
                return 0
            marks = [
                {
                    "attempt_id": attempt_id,
                    "task_index": i,
                    "run_id": run_id,
                    "harvested_at": now,
                    "note": (r.note or None) and r.note[:4096],
                }
                for i, r in sorted(new.items())
            ]
            points = [
                {
                    "attempt_id": attempt_id,
                    "task_index": i,
                    "run_id": run_id,
                    "name": k,
                    "step": s,
                    "value": v,
                }
                for i, r in sorted(new.items())
                for k, s, v in _points(r)
            ]
            connection = session.connection()
            connection.execute(INSERT_TASK_OUTPUT, marks)
            if points:
                connection.execute(INSERT_TASK_METRIC, points)
        return len(new)

    def results(
        self, attempt_id: int, *, series: bool = True, indices: Iterable[int] | None = None
    ) -> dict[int, TaskResult]:
        """The harvested tasks of an attempt (or of those of ``indices``) with their metrics;
        ``series=False`` reads the summaries only (a listing's need: they hold each series' last value)."""
        wanted = None if indices is None else sorted(set(indices))
        with self.db.session() as session:
            marks = select(TaskOutputRow.task_index, TaskOutputRow.note).where(
                TaskOutputRow.attempt_id == attempt_id
            )
            query = select(
                TaskMetricRow.task_index, TaskMetricRow.name, TaskMetricRow.step, TaskMetricRow.value
            )
            query = query.where(TaskMetricRow.attempt_id == attempt_id).order_by(TaskMetricRow.id)
            if not series:  # a summary holds each series' last value too (``read_metrics``)
                query = query.where(TaskMetricRow.step.is_(None))
            if wanted is not None:
                marks = marks.where(TaskOutputRow.task_index.in_(wanted))
                query = query.where(TaskMetricRow.task_index.in_(wanted))
            notes = dict(session.execute(marks).all())
            found: dict[int, tuple[dict[str, float], Series]] = {i: ({}, {}) for i in notes}
            for index, name, step, value in session.execute(query):
                if index not in found:
                    continue
                summary, points = found[index]
                if step is None:
                    summary[name] = value
                else:
                    points.setdefault(name, []).append((step, value))
        return {
            i: TaskResult(summary=summary, series=points if series else {}, note=notes[i])
            for i, (summary, points) in found.items()
        }


def _points(result: TaskResult) -> list[tuple[str, int | None, float]]:
    points: list[tuple[str, int | None, float]] = [(k, None, v) for k, v in result.summary.items()]
    points += [(k, step, v) for k, values in result.series.items() for step, v in values]
    return points
