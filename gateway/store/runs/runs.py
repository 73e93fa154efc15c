"""Reading and writing runs, attempts and their timeline.

Every method opens one unit of work (``Database.session``) and returns
domain values (``gateway.core.runs.values``), never ORM rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, and_, func, or_, select
from sqlalchemy.orm import selectinload

from gateway.core.runs.idempotency import IdempotencyClaim
from gateway.core.runs.paging import Cursor
from gateway.core.runs.values import Attempt, NewRun, Page, Run, RunFilter, StateEvent
from gateway.core.slurm.states import LIVE, RunState
from gateway.store.audit.audit import AuditEntry, append, append_many
from gateway.store.db import Database
from gateway.store.models import AttemptRow, RunRow, RunTagRow, utcnow
from gateway.store.rows import (
    INSERT_ATTEMPT,
    INSERT_ATTEMPTS,
    INSERT_EVENT,
    INSERT_EVENTS_RETURNING,
    INSERT_INPUT,
    INSERT_RUN,
    INSERT_TAG,
    attempt_row,
    first_attempt_values,
    insert_key_once,
    load_run,
    new_run_value,
    run_values,
    to_attempt,
    to_run,
)
from gateway.store.runs.attempts import AttemptWrites
from gateway.store.runs.keys import IdempotencyKeys
from gateway.store.runs.timeline import TimelineWrites

# Attempts the refresher asks Slurm about: live ones, and those whose state is unknown.
SUBMITTING = RunState.SUBMITTING.value
POLLED_STATES = [s.value for s in LIVE if s is not RunState.SUBMITTING] + [RunState.UNKNOWN.value]


class RunStore(TimelineWrites, AttemptWrites, IdempotencyKeys):
    def __init__(self, db: Database) -> None:
        self.db = db
        self._insert_key = insert_key_once(db.dialect)

    # -- writes -------------------------------------------------------------

    def create_run(
        self,
        new: NewRun,
        *,
        audit: AuditEntry | None = None,
        claim: IdempotencyClaim | None = None,
    ) -> Run | None:
        """Write a run and its first attempt (SUBMITTING) in one transaction, with ``audit``.

        With ``claim``, its idempotency key is written in the same transaction; when another request
        holds the (unexpired) key already, nothing is written and None is returned.
        Plain INSERTs (no ORM unit of work): this sits on the submit path,
        which has to stay close to the cost of a bare sbatch.
        """
        return self.create_runs([(new, audit, claim)])[0]

    def create_runs(
        self, batch: Sequence[tuple[NewRun, AuditEntry | None, IdempotencyClaim | None]]
    ) -> list[Run | None]:
        """Write every run of ``batch`` (each with its first attempt, SUBMITTING, its audit entry and
        its idempotency claim) in one transaction: all of them are recorded, or none.

        Returns each item's run in order; None for an item whose key another request holds already
        (that item alone is not written: the caller replays the earlier request's run).
        """
        now = utcnow()
        if len(batch) == 1:  # one run (POST /runs): plain statements, the path tuned for it
            new, audit, claim = batch[0]
            with self.db.transaction(writes=True) as session:
                if claim is not None and not self._take_key(session, claim, new.id, now):
                    return [None]
                return [self._write_run(session, new, audit, now)]
        with self.db.transaction(writes=True) as session:
            taken = self._take_keys(session, [(c, n.id) for n, _, c in batch if c is not None], now)
            keep = [(n, a) for n, a, c in batch if c is None or c.key in taken]
            written = iter(self._write_runs(session, keep, now))
            return [next(written) if c is None or c.key in taken else None for _, _, c in batch]

    def _write_runs(
        self,
        session: Connection,
        batch: Sequence[tuple[NewRun, AuditEntry | None]],
        now: datetime,
    ) -> list[Run]:
        """The statements of many new runs, one executemany per table, inside the caller's transaction."""
        if not batch:
            return []
        tags = [list(dict.fromkeys(new.spec.tags)) for new, _ in batch]
        session.execute(INSERT_RUN, [run_values(new, now) for new, _ in batch])
        tag_rows = [
            {"run_id": new.id, "tag": t} for (new, _), ts in zip(batch, tags, strict=True) for t in ts
        ]
        if tag_rows:
            session.execute(INSERT_TAG, tag_rows)
        input_rows = [{"run_id": new.id, **asdict(i)} for new, _ in batch for i in new.inputs]
        if input_rows:
            session.execute(INSERT_INPUT, input_rows)
        attempt_ids = (
            session.execute(INSERT_ATTEMPTS, [first_attempt_values(new, now) for new, _ in batch])
            .scalars()
            .all()
        )
        submitting = RunState.SUBMITTING.value
        event_ids = (
            session.execute(
                INSERT_EVENTS_RETURNING,
                [
                    {
                        "attempt_id": a,
                        "at": now,
                        "to_state": submitting,
                        "source": "gateway",
                    }
                    for a in attempt_ids
                ],
            )
            .scalars()
            .all()
        )
        append_many(session, [audit for _, audit in batch if audit is not None])
        runs = []
        for (new, _), run_tags, attempt_id, event_id in zip(batch, tags, attempt_ids, event_ids, strict=True):
            event = StateEvent(
                event_id,
                attempt_id,
                now,
                None,
                RunState.SUBMITTING,
                None,
                None,
                "gateway",
            )
            runs.append(new_run_value(new, attempt_id=attempt_id, event=event, tags=run_tags, now=now))
        return runs

    def _write_run(self, session: Connection, new: NewRun, audit: AuditEntry | None, now: datetime) -> Run:
        """The statements of one new run, inside the caller's transaction; the run as written."""
        tags = list(dict.fromkeys(new.spec.tags))
        # Core statements on the tables, parameters bound: compiled once, cached.
        session.execute(INSERT_RUN, run_values(new, now))
        if tags:
            session.execute(INSERT_TAG, [{"run_id": new.id, "tag": t} for t in tags])
        if new.inputs:
            session.execute(INSERT_INPUT, [{"run_id": new.id, **asdict(i)} for i in new.inputs])
        attempt_id = session.execute(INSERT_ATTEMPT, first_attempt_values(new, now)).scalar_one()
        event_id = session.execute(
            INSERT_EVENT,
            {
                "attempt_id": attempt_id,
                "at": now,
                "to_state": RunState.SUBMITTING.value,
                "source": "gateway",
            },
        ).scalar_one()
        if audit is not None:
            append(session, audit)
        event = StateEvent(event_id, attempt_id, now, None, RunState.SUBMITTING, None, None, "gateway")
        return new_run_value(new, attempt_id=attempt_id, event=event, tags=tags, now=now)

    # -- reads --------------------------------------------------------------

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
                or_(
                    RunRow.created_at < created,
                    and_(RunRow.created_at == created, RunRow.id < run_id),
                )
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


# -- rows -> values ------------------------------------------------------------
