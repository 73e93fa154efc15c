"""Reading and writing runs, attempts and their timeline.

Every method opens one unit of work (``Database.session``) and returns
domain values (``gateway.domain``), never ORM rows.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import Connection, and_, bindparam, insert, or_, select, update
from sqlalchemy.orm import Session, selectinload

from gateway.core.states import LIVE, RunState
from gateway.domain import Attempt, AttemptUpdate, Page, Run, StateEvent
from gateway.errors import Conflict, NotFound, SpecError, SpecIssue
from gateway.store.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.models import AttemptRow, RunRow, RunTagRow, StateEventRow, utcnow

RUNS, RUN_TAGS = RunRow.__table__, RunTagRow.__table__
ATTEMPTS, EVENTS = AttemptRow.__table__, StateEventRow.__table__

# Attempts the refresher asks Slurm about: live ones, and those whose state is unknown.
POLLED_STATES = [s.value for s in LIVE if s is not RunState.SUBMITTING] + [RunState.UNKNOWN.value]


class RunStore:
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
                _INSERT_RUN,
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
                    "created_at": now,
                    "updated_at": now,
                },
            )
            if unique_tags:
                session.execute(_INSERT_TAG, [{"run_id": run_id, "tag": t} for t in unique_tags])
            attempt_id = session.execute(
                _INSERT_ATTEMPT,
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
                _INSERT_EVENT,
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
                _RECORD_JOB_ID,
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
                _INSERT_EVENT,
                {
                    "attempt_id": attempt_id,
                    "at": now,
                    "from_state": RunState.SUBMITTING.value,
                    "to_state": queued,
                    "slurm_state": "PENDING",
                    "source": source,
                },
            ).scalar_one()
            _set_run_state(session, found.run_id, found.number, queued)
        return StateEvent(
            event_id, attempt_id, now, RunState.SUBMITTING, RunState.QUEUED, "PENDING", None, source
        )

    def mark_never_submitted(self, attempt_id: int, reason: str, *, source: str) -> Attempt:
        with self.db.session() as session:
            row = _attempt_row(session, attempt_id)
            _transition(
                session,
                row,
                RunState.NEVER_SUBMITTED,
                slurm_state=None,
                reason=reason,
                source=source,
                at=utcnow(),
            )
            return _attempt(row, with_events=True)

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
                changed = _transition(
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

    def add_note(self, attempt_id: int, note: str, *, source: str, audit: AuditEntry | None = None) -> None:
        """Record an event that changes no state (a cancel request, a warning)."""
        with self.db.session() as session:
            if audit is not None:
                append(session, audit)
            row = _attempt_row(session, attempt_id)
            row.events.append(
                StateEventRow(
                    at=utcnow(),
                    from_state=row.state,
                    to_state=row.state,
                    slurm_state=row.slurm_state,
                    reason=note,
                    source=source,
                )
            )

    def mark_stale(self, attempt_ids: Sequence[int]) -> None:
        """Flag attempts Slurm could not answer for; their state stays as last known."""
        if not attempt_ids:
            return
        with self.db.session() as session:
            for row in session.scalars(select(AttemptRow).where(AttemptRow.id.in_(attempt_ids))):
                row.stale = True

    # -- reads --------------------------------------------------------------

    def polled_attempts(self) -> list[Attempt]:
        """Attempts with a job id whose state can still change (the refresher's work list)."""
        with self.db.session() as session:
            rows = session.scalars(
                select(AttemptRow).where(AttemptRow.state.in_(POLLED_STATES), AttemptRow.job_id.is_not(None))
            )
            return [_attempt(r) for r in rows]

    def submitting_attempts(self, *, created_before: datetime | None = None) -> list[Attempt]:
        with self.db.session() as session:
            query = select(AttemptRow).where(AttemptRow.state == RunState.SUBMITTING.value)
            if created_before is not None:
                query = query.where(AttemptRow.created_at < created_before)
            return [_attempt(r) for r in session.scalars(query.order_by(AttemptRow.id))]

    def get_run(self, run_id: str) -> Run:
        with self.db.session() as session:
            return _load_run(session, run_id)

    def get_attempt(self, attempt_id: int) -> Attempt:
        with self.db.session() as session:
            return _attempt(_attempt_row(session, attempt_id), with_events=True)

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
            created, run_id = _decode_cursor(cursor)
            query = query.where(
                or_(RunRow.created_at < created, and_(RunRow.created_at == created, RunRow.id < run_id))
            )
        query = query.order_by(RunRow.created_at.desc(), RunRow.id.desc()).limit(limit + 1)
        with self.db.session() as session:
            rows = list(session.scalars(query))
            more = len(rows) > limit
            rows = rows[:limit]
            items = [_run(r) for r in rows]
        next_cursor = _encode_cursor(rows[-1].created_at, rows[-1].id) if more and rows else None
        return Page(items=items, next_cursor=next_cursor)


# -- rows -> values ------------------------------------------------------------


def _load_run(session: Session, run_id: str) -> Run:
    row = session.scalar(
        select(RunRow)
        .where(RunRow.id == run_id)
        .options(
            selectinload(RunRow.attempts).selectinload(AttemptRow.events),
            selectinload(RunRow.tags),
        )
        .execution_options(populate_existing=True)
    )
    if row is None:
        raise NotFound(f"no run {run_id!r}")
    return _run(row, with_events=True)


def _attempt_row(session: Session, attempt_id: int) -> AttemptRow:
    row = session.get(AttemptRow, attempt_id)
    if row is None:
        raise NotFound(f"no attempt {attempt_id}")
    return row


def _transition(
    session: Session,
    row: AttemptRow,
    state: RunState,
    *,
    slurm_state: str | None,
    reason: str | None,
    source: str,
    at: datetime,
) -> bool:
    """Set an attempt's state; record an event when state or reason changed.

    Writes the event and the run's state with plain statements, so a
    transition never loads the attempt's timeline or the run's other attempts.
    """
    previous = RunState(row.state)
    changed = previous is not state or (row.reason or None) != (reason or None)
    row.slurm_state = slurm_state
    row.reason = reason
    row.stale = False
    if changed:
        row.state = state.value
        session.add(
            StateEventRow(
                attempt_id=row.id,
                at=at,
                from_state=previous.value,
                to_state=state.value,
                slurm_state=slurm_state,
                reason=reason,
                source=source,
            )
        )
        _set_run_state(session, row.run_id, row.number, state.value)
    return changed


def _set_run_state(session: Session | Connection, run_id: str, number: int, state: str) -> None:
    """A run's state is its latest attempt's: set it unless a later attempt exists."""
    session.execute(_SET_RUN_STATE, {"run_id": run_id, "number": number, "state": state, "now": utcnow()})


# Statements on the submit path, built once (building them per call costs more than running them).
_INSERT_RUN = insert(RUNS)
_INSERT_TAG = insert(RUN_TAGS)
_INSERT_ATTEMPT = insert(ATTEMPTS).returning(ATTEMPTS.c.id)
_INSERT_EVENT = insert(EVENTS).returning(EVENTS.c.id)
_RECORD_JOB_ID = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.id == bindparam("attempt_id"), ATTEMPTS.c.state == bindparam("from_state"))
    .values(
        job_id=bindparam("job_id"),
        state=bindparam("to_state"),
        slurm_state="PENDING",
        reason=None,
        stale=False,
        updated_at=bindparam("now"),
    )
    .returning(ATTEMPTS.c.run_id, ATTEMPTS.c.number)
)
_LATER_ATTEMPT = select(ATTEMPTS.c.id).where(
    ATTEMPTS.c.run_id == bindparam("run_id"), ATTEMPTS.c.number > bindparam("number")
)
_SET_RUN_STATE = (
    update(RUNS)
    .where(RUNS.c.id == bindparam("run_id"), ~_LATER_ATTEMPT.exists())
    .values(state=bindparam("state"), updated_at=bindparam("now"))
)


def _event(row: StateEventRow) -> StateEvent:
    return StateEvent(
        id=row.id,
        attempt_id=row.attempt_id,
        at=row.at,
        from_state=RunState(row.from_state) if row.from_state else None,
        to_state=RunState(row.to_state),
        slurm_state=row.slurm_state,
        reason=row.reason,
        source=row.source,
    )


def _attempt(row: AttemptRow, *, with_events: bool = False) -> Attempt:
    return Attempt(
        id=row.id,
        run_id=row.run_id,
        number=row.number,
        tag=row.tag,
        job_id=row.job_id,
        state=RunState(row.state),
        slurm_state=row.slurm_state,
        reason=row.reason,
        stale=bool(row.stale),
        node_list=row.node_list,
        submit_time=row.submit_time,
        start_time=row.start_time,
        end_time=row.end_time,
        exit_code=row.exit_code,
        exit_signal=row.exit_signal,
        elapsed_s=row.elapsed_s,
        alloc_tres=dict(row.alloc_tres or {}),
        max_rss_kb=row.max_rss_kb,
        cancelled_by_uid=row.cancelled_by_uid,
        timelimit_min=row.timelimit_min,
        tasks=dict(row.tasks or {}),
        array_size=row.array_size,
        expected_start=row.expected_start,
        created_at=row.created_at,
        updated_at=row.updated_at,
        events=[_event(e) for e in row.events] if with_events else [],
    )


def _run(row: RunRow, *, with_events: bool = False) -> Run:
    return Run(
        id=row.id,
        name=row.name,
        project=row.project,
        queue=row.queue,
        submitter=row.submitter,
        tags=[t.tag for t in row.tags],
        state=RunState(row.state),
        spec=dict(row.spec),
        spec_sha256=row.spec_sha256,
        script=row.script,
        script_sha256=row.script_sha256,
        template_name=row.template_name,
        template_version=row.template_version,
        run_dir=row.run_dir,
        created_at=row.created_at,
        updated_at=row.updated_at,
        attempts=[_attempt(a, with_events=with_events) for a in row.attempts],
    )


def _encode_cursor(created: datetime, run_id: str) -> str:
    return base64.urlsafe_b64encode(f"{created.isoformat()}|{run_id}".encode()).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        created, _, run_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        return datetime.fromisoformat(created), run_id
    except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
        raise SpecError(
            [SpecIssue("cursor", "not a cursor this gateway gave out", cursor)], location="query"
        ) from exc
