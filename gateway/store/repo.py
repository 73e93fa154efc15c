"""Reading and writing runs, attempts and their timeline.

Every method opens one unit of work (``Database.session``) and returns
domain values (``gateway.domain``), never ORM rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import selectinload

from gateway.core.states import LIVE, RunState
from gateway.domain import Attempt, AttemptUpdate, Page, Run, StateEvent
from gateway.errors import Conflict
from gateway.store.attempts import AttemptWrites
from gateway.store.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.models import AttemptRow, RunRow, RunTagRow, utcnow
from gateway.store.rows import (
    INSERT_ATTEMPT,
    INSERT_EVENT,
    INSERT_INPUT,
    INSERT_RUN,
    INSERT_TAG,
    RECORD_JOB_ID,
    attempt_row,
    decode_cursor,
    encode_cursor,
    load_run,
    set_run_state,
    to_attempt,
    to_run,
    transition,
)

# Attempts the refresher asks Slurm about: live ones, and those whose state is unknown.
POLLED_STATES = [s.value for s in LIVE if s is not RunState.SUBMITTING] + [RunState.UNKNOWN.value]


class RunStore(AttemptWrites):
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- writes -------------------------------------------------------------

    def create_run(
        self,
        *,
        run_id: str,
        name: str,
        project: str,
        queue: str,
        submitter: str,
        tags: Sequence[str],
        spec: dict,
        spec_sha256: str,
        script: str,
        script_sha256: str,
        template_name: str,
        template_version: str,
        run_dir: str,
        attempt_tag: str,
        array_size: int | None = None,
        audit: AuditEntry | None = None,
        parent_run_id: str | None = None,
        derived_diff: list[dict] | None = None,
        code: dict | None = None,
        environment: dict | None = None,
        inputs: Sequence[dict] = (),
    ) -> Run:
        """Write a run and its first attempt (SUBMITTING) in one transaction.

        Plain INSERTs (no ORM unit of work): this sits on the submit path,
        which has to stay close to the cost of a bare sbatch.
        """
        now = utcnow()
        submitting = RunState.SUBMITTING.value
        unique_tags = list(dict.fromkeys(tags))
        with self.db.transaction() as session:
            # Core statements on the tables, parameters bound: compiled once, cached.
            session.execute(
                INSERT_RUN,
                {
                    "id": run_id,
                    "name": name,
                    "project": project,
                    "queue": queue,
                    "submitter": submitter,
                    "state": submitting,
                    "spec": spec,
                    "spec_sha256": spec_sha256,
                    "script": script,
                    "script_sha256": script_sha256,
                    "template_name": template_name,
                    "template_version": template_version,
                    "run_dir": run_dir,
                    "parent_run_id": parent_run_id,
                    "derived_diff": derived_diff,
                    "code": code,
                    "environment": environment,
                    "created_at": now,
                    "updated_at": now,
                },
            )
            if unique_tags:
                session.execute(INSERT_TAG, [{"run_id": run_id, "tag": t} for t in unique_tags])
            if inputs:
                session.execute(INSERT_INPUT, [{"run_id": run_id, **row} for row in inputs])
            attempt_id = session.execute(
                INSERT_ATTEMPT,
                {
                    "run_id": run_id,
                    "number": 1,
                    "tag": attempt_tag,
                    "state": submitting,
                    "stale": False,
                    "alloc_tres": {},
                    "tasks": {},
                    "array_size": array_size,
                    "created_at": now,
                    "updated_at": now,
                },
            ).scalar_one()
            event_id = session.execute(
                INSERT_EVENT,
                {"attempt_id": attempt_id, "at": now, "to_state": submitting, "source": "gateway"},
            ).scalar_one()
            if audit is not None:
                append(session, audit)
        event = StateEvent(event_id, attempt_id, now, None, RunState.SUBMITTING, None, None, "gateway")
        attempt = Attempt(
            id=attempt_id,
            run_id=run_id,
            number=1,
            tag=attempt_tag,
            job_id=None,
            state=RunState.SUBMITTING,
            slurm_state=None,
            reason=None,
            stale=False,
            node_list=None,
            submit_time=None,
            start_time=None,
            end_time=None,
            exit_code=None,
            exit_signal=None,
            elapsed_s=None,
            alloc_tres={},
            max_rss_kb=None,
            cancelled_by_uid=None,
            timelimit_min=None,
            tasks={},
            array_size=array_size,
            expected_start=None,
            created_at=now,
            updated_at=now,
            events=[event],
        )
        return Run(
            id=run_id,
            name=name,
            project=project,
            queue=queue,
            submitter=submitter,
            tags=unique_tags,
            state=RunState.SUBMITTING,
            spec=spec,
            spec_sha256=spec_sha256,
            script=script,
            script_sha256=script_sha256,
            template_name=template_name,
            template_version=template_version,
            run_dir=run_dir,
            created_at=now,
            updated_at=now,
            attempts=[attempt],
            parent_run_id=parent_run_id,
            derived_diff=derived_diff,
            code=code,
            environment=environment,
        )

    def record_job_id(self, attempt_id: int, job_id: str, *, source: str = "gateway") -> StateEvent:
        """Store the Slurm job id of a SUBMITTING attempt; it becomes QUEUED. Returns the event.

        The update only applies to an attempt still SUBMITTING, so the submit
        path and a reconciliation can never both record a job for it
        (Conflict for the loser).
        """
        now = utcnow()
        queued = RunState.QUEUED.value
        with self.db.transaction() as session:
            found = session.execute(
                RECORD_JOB_ID,
                {
                    "attempt_id": attempt_id,
                    "from_state": RunState.SUBMITTING.value,
                    "job_id": job_id,
                    "to_state": queued,
                    "now": now,
                },
            ).first()
            if found is None:
                raise Conflict(f"attempt {attempt_id} is no longer submitting; its job was already recorded")
            event_id = session.execute(
                INSERT_EVENT,
                {
                    "attempt_id": attempt_id,
                    "at": now,
                    "from_state": RunState.SUBMITTING.value,
                    "to_state": queued,
                    "slurm_state": "PENDING",
                    "source": source,
                },
            ).scalar_one()
            set_run_state(session, found.run_id, found.number, queued)
        return StateEvent(
            event_id, attempt_id, now, RunState.SUBMITTING, RunState.QUEUED, "PENDING", None, source
        )

    def apply_updates(self, updates: Iterable[AttemptUpdate]) -> int:
        """Write what a refresh learned; returns how many transitions were recorded."""
        updates = list(updates)
        if not updates:
            return 0
        transitions = 0
        with self.db.session() as session:
            rows = {
                r.id: r
                for r in session.scalars(
                    select(AttemptRow).where(AttemptRow.id.in_([u.attempt_id for u in updates]))
                )
            }
            for update in updates:
                row = rows.get(update.attempt_id)
                if row is None:
                    continue
                for key, value in update.fields.items():
                    setattr(row, key, value)
                row.stale = update.stale
                if update.stale:
                    row.updated_at = utcnow()
                    continue
                changed = transition(
                    session,
                    row,
                    update.state,
                    slurm_state=update.slurm_state,
                    reason=update.reason,
                    source=update.source,
                    at=update.event_at or utcnow(),
                )
                transitions += int(changed)
        return transitions

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
        with self.db.session() as session:
            query = select(AttemptRow).where(AttemptRow.state == RunState.SUBMITTING.value)
            if created_before is not None:
                query = query.where(AttemptRow.created_at < created_before)
            return [to_attempt(r) for r in session.scalars(query.order_by(AttemptRow.id))]

    def get_run(self, run_id: str) -> Run:
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
        with self.db.session() as session:
            rows = session.scalars(select(AttemptRow).where(AttemptRow.id.in_(list(attempt_ids))))
            return [to_attempt(r, with_events=True) for r in rows]

    def get_attempt(self, attempt_id: int) -> Attempt:
        with self.db.session() as session:
            return to_attempt(attempt_row(session, attempt_id), with_events=True)

    def list_runs(
        self,
        *,
        projects: Sequence[str] | None = None,
        project: str | None = None,
        state: RunState | None = None,
        submitter: str | None = None,
        tag: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page:
        """Runs, newest first, ``limit`` at a time; ``next_cursor`` fetches the next page."""
        query = select(RunRow).options(selectinload(RunRow.attempts), selectinload(RunRow.tags))
        if projects is not None:
            query = query.where(RunRow.project.in_(list(projects)))
        if project:
            query = query.where(RunRow.project == project)
        if state:
            query = query.where(RunRow.state == state.value)
        if submitter:
            query = query.where(RunRow.submitter == submitter)
        if tag:
            query = query.where(RunRow.id.in_(select(RunTagRow.run_id).where(RunTagRow.tag == tag)))
        if cursor:
            created, run_id = decode_cursor(cursor)
            query = query.where(
                or_(RunRow.created_at < created, and_(RunRow.created_at == created, RunRow.id < run_id))
            )
        query = query.order_by(RunRow.created_at.desc(), RunRow.id.desc()).limit(limit + 1)
        with self.db.session() as session:
            rows = list(session.scalars(query))
            more = len(rows) > limit
            rows = rows[:limit]
            items = [to_run(r) for r in rows]
        next_cursor = encode_cursor(rows[-1].created_at, rows[-1].id) if more and rows else None
        return Page(items=items, next_cursor=next_cursor)


# -- rows -> values ------------------------------------------------------------
