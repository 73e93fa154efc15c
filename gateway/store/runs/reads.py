"""Reads of the run store: runs, their pages and counts, and the attempts the background jobs work on.

Every method opens one unit of work (``Database.session``) and returns
domain values (``gateway.core.runs.values``), never ORM rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.orm import selectinload

from gateway.core.runs.paging import Cursor
from gateway.core.runs.values import Attempt, Page, Run, RunFilter
from gateway.core.slurm.states import LIVE, RunState
from gateway.store.db import Database
from gateway.store.models import AttemptRow, RunRow, RunTagRow
from gateway.store.rows import attempt_row, load_run, to_attempt, to_run

# Attempts the refresher asks Slurm about: live ones, and those whose state is unknown.
POLLED_STATES = [s.value for s in LIVE if s is not RunState.SUBMITTING] + [RunState.UNKNOWN.value]


class RunReads:
    """Mixed into RunStore: the reads."""

    db: Database

    def polled_attempts(self) -> list[Attempt]:
        """Attempts with a job id whose state can still change (the refresher's work list)."""
        with self.db.session() as session:
            rows = session.scalars(
                select(AttemptRow).where(
                    AttemptRow.state.in_(POLLED_STATES),
                    AttemptRow.job_id.is_not(None),
                    AttemptRow.superseded.is_(False),
                )
            )
            return [to_attempt(r) for r in rows]

    def submitting_attempts(self, *, created_before: datetime | None = None) -> list[Attempt]:
        """Attempts still SUBMITTING (created before ``created_before`` when given), oldest first."""
        with self.db.session() as session:
            query = select(AttemptRow).where(AttemptRow.state == RunState.SUBMITTING.value)
            if created_before is not None:
                query = query.where(AttemptRow.created_at < created_before)
            return [to_attempt(r) for r in session.scalars(query.order_by(AttemptRow.id))]

    def get_run(self, run_id: str) -> Run:
        """The run with its attempts, their events and its tags; NotFound for an unknown id."""
        with self.db.session() as session:
            return load_run(session, run_id)

    def children(self, run_id: str) -> list[str]:
        """Ids of the runs derived from this one (reruns), oldest first."""
        with self.db.session() as session:
            return list(
                session.scalars(
                    select(RunRow.id).where(RunRow.parent_run_id == run_id).order_by(RunRow.created_at)
                )
            )

    def attempts(self, attempt_ids: Sequence[int]) -> list[Attempt]:
        """The attempts with these ids, with their events (unknown ids are left out; no order)."""
        with self.db.session() as session:
            rows = session.scalars(select(AttemptRow).where(AttemptRow.id.in_(list(attempt_ids))))
            return [to_attempt(r, with_events=True) for r in rows]

    def get_attempt(self, attempt_id: int) -> Attempt:
        """The attempt with its events; NotFound for an unknown id."""
        with self.db.session() as session:
            return to_attempt(attempt_row(session, attempt_id), with_events=True)

    def count_by_project_state(self) -> dict[tuple[str, str], int]:
        """How many runs each (project, state) holds: one grouped query (read at each metrics scrape)."""
        query = select(RunRow.project, RunRow.state, func.count()).group_by(RunRow.project, RunRow.state)
        with self.db.session() as session:
            return {(project, state): count for project, state, count in session.execute(query)}

    def list_runs(self, where: RunFilter | None = None, *, projects: Sequence[str] | None = None) -> Page:
        """Runs of ``projects`` (None: all), newest first, as ``where`` says; ``next_cursor`` pages on."""
        where = where or RunFilter()
        query = select(RunRow).options(selectinload(RunRow.attempts), selectinload(RunRow.tags))
        if projects is not None:
            query = query.where(RunRow.project.in_(list(projects)))
        if where.project:
            query = query.where(RunRow.project == where.project)
        if where.state:
            query = query.where(RunRow.state == where.state.value)
        if where.submitter:
            query = query.where(RunRow.submitter == where.submitter)
        if where.tag:
            query = query.where(RunRow.id.in_(select(RunTagRow.run_id).where(RunTagRow.tag == where.tag)))
        if where.cluster:
            query = query.where(RunRow.id.in_(_on_cluster(where.cluster, where.cluster_first)))
        if where.since:
            query = query.where(RunRow.created_at >= where.since)
        if where.until:
            query = query.where(RunRow.created_at < where.until)
        if where.cursor:
            created, run_id = where.cursor.created_at, where.cursor.run_id
            query = query.where(
                or_(RunRow.created_at < created, and_(RunRow.created_at == created, RunRow.id < run_id))
            )
        query = query.order_by(RunRow.created_at.desc(), RunRow.id.desc()).limit(where.limit + 1)
        with self.db.session() as session:
            rows = list(session.scalars(query))
            more = len(rows) > where.limit
            rows = rows[: where.limit]
            items = [to_run(r) for r in rows]
        next_cursor = Cursor(rows[-1].created_at, rows[-1].id) if more and rows else None
        return Page(items=items, next_cursor=next_cursor)


def _on_cluster(cluster: str, first: bool) -> Select[Any]:
    """The ids of runs with an attempt on ``cluster`` (``first``: it is the site's first cluster, which
    also holds the attempts recorded before clusters existed, their cluster NULL)."""
    on = AttemptRow.cluster == cluster
    return select(AttemptRow.run_id).where(or_(on, AttemptRow.cluster.is_(None)) if first else on)
