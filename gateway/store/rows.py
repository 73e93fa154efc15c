"""Rows to domain values, and the statements and steps the run store is built from."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, Insert, Update, bindparam, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, selectinload

from gateway.core.runs.values import Attempt, NewRun, Run, StateEvent
from gateway.core.slurm.observe import moved
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import NotFound, StoreError
from gateway.store.lineage.models import RunInputRow
from gateway.store.models import AttemptRow, IdempotencyKeyRow, RunRow, RunTagRow, StateEventRow, utcnow

RUNS, RUN_TAGS = RunRow.__table__, RunTagRow.__table__
ATTEMPTS, EVENTS = AttemptRow.__table__, StateEventRow.__table__


def load_run(session: Session, run_id: str) -> Run:
    """The run ``run_id`` read afresh in ``session``, attempts, events and tags loaded; or NotFound."""
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
    return to_run(row, with_events=True)


def attempt_row(session: Session, attempt_id: int) -> AttemptRow:
    """The attempt row ``attempt_id`` in ``session``, or NotFound."""
    row = session.get(AttemptRow, attempt_id)
    if row is None:
        raise NotFound(f"no attempt {attempt_id}")
    return row


def transition(
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
    changed = moved(previous, row.reason, state, reason)
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
        set_run_state(session, row.run_id, row.number, state.value)
    return changed


def set_run_state(session: Session | Connection, run_id: str, number: int, state: str) -> None:
    """A run's state is its latest attempt's: set it unless a later attempt exists."""
    session.execute(SET_RUN_STATE, {"run_id": run_id, "number": number, "state": state, "now": utcnow()})


# Statements on the submit path, built once (building them per call costs more than running them).
INSERT_RUN = insert(RUNS)
INSERT_TAG = insert(RUN_TAGS)
INSERT_INPUT = insert(RunInputRow.__table__)
INSERT_ATTEMPT = insert(ATTEMPTS).returning(ATTEMPTS.c.id)
INSERT_EVENT = insert(EVENTS).returning(EVENTS.c.id)
INSERT_EVENTS = insert(EVENTS)  # many at once, no ids back
# Many at once with their ids back, in the order given (a batch of runs: one statement per table).
INSERT_ATTEMPTS = insert(ATTEMPTS).returning(ATTEMPTS.c.id, sort_by_parameter_order=True)
INSERT_EVENTS_RETURNING = insert(EVENTS).returning(EVENTS.c.id, sort_by_parameter_order=True)
RECORD_JOB_ID = (
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
# A batch's job ids: the attempts still SUBMITTING (locked), then one executemany of the update.
STILL_SUBMITTING = (
    select(ATTEMPTS.c.id, ATTEMPTS.c.run_id, ATTEMPTS.c.number)
    .where(ATTEMPTS.c.id.in_(bindparam("ids", expanding=True)), ATTEMPTS.c.state == bindparam("state"))
    .with_for_update()
)
RECORD_JOB_IDS = (
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
)
LATER_ATTEMPT = select(ATTEMPTS.c.id).where(
    ATTEMPTS.c.run_id == bindparam("run_id"), ATTEMPTS.c.number > bindparam("number")
)
SET_RUN_STATE = (
    update(RUNS)
    .where(RUNS.c.id == bindparam("run_id"), ~LATER_ATTEMPT.exists())
    .values(state=bindparam("state"), updated_at=bindparam("now"))
)


# The refresh's batched writes (TimelineWrites.apply_updates, AttemptWrites.mark_stale).
CURRENT_STATES = select(
    ATTEMPTS.c.id, ATTEMPTS.c.state, ATTEMPTS.c.reason, ATTEMPTS.c.run_id, ATTEMPTS.c.number
).where(ATTEMPTS.c.id.in_(bindparam("ids", expanding=True)))
MARK_STALE = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.id.in_(bindparam("ids", expanding=True)))
    .values(stale=True, updated_at=bindparam("now"))
)


@functools.lru_cache(maxsize=64)
def update_attempt(columns: tuple[str, ...]) -> Update:
    """``UPDATE attempts SET <columns> WHERE id = :attempt_id``, the values bound as ``v_<column>``
    (a bound name may not be a column's name); built once per set of columns."""
    return (
        update(ATTEMPTS)
        .where(ATTEMPTS.c.id == bindparam("attempt_id"))
        .values({column: bindparam(f"v_{column}") for column in columns})
    )


def update_attempt_params(attempt_id: int, values: dict[str, Any]) -> dict[str, Any]:
    """The parameters of ``update_attempt(tuple(sorted(values)))`` that write ``values`` to ``attempt_id``."""
    return {"attempt_id": attempt_id, **{f"v_{column}": value for column, value in values.items()}}


KEYS = IdempotencyKeyRow.__table__
FIND_KEY = select(KEYS.c.run_id, KEYS.c.operation, KEYS.c.request_sha256).where(
    KEYS.c.user == bindparam("user"), KEYS.c.key == bindparam("key"), KEYS.c.expires_at > bindparam("now")
)
FIND_KEYS = select(KEYS.c.key, KEYS.c.run_id, KEYS.c.operation, KEYS.c.request_sha256).where(
    KEYS.c.user == bindparam("user"),
    KEYS.c.key.in_(bindparam("keys", expanding=True)),
    KEYS.c.expires_at > bindparam("now"),
)
DROP_EXPIRED_KEY = delete(KEYS).where(
    KEYS.c.user == bindparam("user"), KEYS.c.key == bindparam("key"), KEYS.c.expires_at <= bindparam("now")
)
DROP_EXPIRED_KEYS_OF = delete(KEYS).where(
    KEYS.c.user == bindparam("user"),
    KEYS.c.key.in_(bindparam("keys", expanding=True)),
    KEYS.c.expires_at <= bindparam("now"),
)
DROP_EXPIRED_KEYS = delete(KEYS).where(KEYS.c.expires_at <= bindparam("now"))


def insert_key_once(dialect: str) -> Insert:
    """INSERT of an idempotency key that returns its key when it wrote the row, and no row when the key
    is there already.

    ON CONFLICT DO NOTHING: on PostgreSQL a second request with the same key waits for the first
    one's transaction and then inserts nothing, so exactly one run owns the key. RETURNING, not
    rowcount: psycopg reports -1 for this statement.
    """
    dialect_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return dialect_insert(KEYS).on_conflict_do_nothing(index_elements=["user", "key"]).returning(KEYS.c.key)


def to_event(row: StateEventRow) -> StateEvent:
    """A state event row as the domain's ``StateEvent``."""
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


def to_attempt(row: AttemptRow, *, with_events: bool = False) -> Attempt:
    """An attempt row as the domain's ``Attempt``; its events only with ``with_events``."""
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
        failure=row.failure,
        origin=row.origin or "submit",
        excluded_nodes=row.excluded_nodes,
        slurm_record=row.slurm_record or 0,
        superseded=bool(row.superseded),
        retry_at=row.retry_at,
        cluster=row.cluster,
        created_at=row.created_at,
        updated_at=row.updated_at,
        events=[to_event(e) for e in row.events] if with_events else [],
    )


def to_run(row: RunRow, *, with_events: bool = False) -> Run:
    """A run row as the domain's ``Run`` (spec validated again), attempts by number."""
    return Run(
        id=row.id,
        name=row.name,
        project=row.project,
        queue=row.queue,
        submitter=row.submitter,
        tags=[t.tag for t in row.tags],
        state=RunState(row.state),
        spec=stored_spec(row),
        spec_sha256=row.spec_sha256,
        script=row.script,
        script_sha256=row.script_sha256,
        template_name=row.template_name,
        template_version=row.template_version,
        run_dir=row.run_dir,
        created_at=row.created_at,
        updated_at=row.updated_at,
        attempts=[to_attempt(a, with_events=with_events) for a in row.attempts],
        parent_run_id=row.parent_run_id,
        derived_diff=row.derived_diff,
        code=row.code,
        environment=row.environment,
        os_user=row.os_user,
        requested_by=row.requested_by,
    )


def stored_spec(row: RunRow) -> RunSpec:
    """A run's spec as submitted. It was validated then; spec fields only ever gain defaults, so an
    old spec still validates (StoreError, not a crash, should one ever not)."""
    try:
        # context "stored": rules added since (secret-looking param names) do not unread an old run
        return RunSpec.model_validate(row.spec, context={"stored": True})
    except ValidationError as exc:
        raise StoreError(f"the stored spec of run {row.id} no longer validates: {exc}") from exc


def run_values(new: NewRun, now: datetime) -> dict[str, Any]:
    """The ``runs`` row of a new run (state SUBMITTING)."""
    spec = new.spec
    return {
        "id": new.id,
        "name": spec.name,
        "project": spec.project,
        "queue": spec.queue,
        "submitter": new.submitter,
        "os_user": new.os_user,
        "requested_by": new.requested_by,
        "state": RunState.SUBMITTING.value,
        "spec": spec.model_dump(mode="json"),
        "spec_sha256": spec.spec_hash(),
        "script": new.script,
        "script_sha256": new.script_sha256,
        "template_name": new.template_name,
        "template_version": new.template_version,
        "run_dir": new.run_dir,
        "parent_run_id": new.parent_run_id,
        "derived_diff": new.derived_diff,
        "code": new.code,
        "environment": new.environment,
        "created_at": now,
        "updated_at": now,
    }


def first_attempt_values(new: NewRun, now: datetime) -> dict[str, Any]:
    """The ``attempts`` row of a new run's first attempt."""
    return {
        "run_id": new.id,
        "number": 1,
        "tag": new.first_tag,
        "state": RunState.SUBMITTING.value,
        "stale": False,
        "alloc_tres": {},
        "tasks": {},
        "array_size": new.array_size,
        "cluster": new.cluster,
        "created_at": now,
        "updated_at": now,
    }


def new_run_value(new: NewRun, *, attempt_id: int, event: StateEvent, tags: list[str], now: datetime) -> Run:
    """The ``Run`` a new run is, as written: no need to read it back."""
    attempt = Attempt(
        id=attempt_id,
        run_id=new.id,
        number=1,
        tag=new.first_tag,
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
        array_size=new.array_size,
        expected_start=None,
        created_at=now,
        updated_at=now,
        events=[event],
        cluster=new.cluster,
    )
    spec = new.spec
    return Run(
        id=new.id,
        name=spec.name,
        project=spec.project,
        queue=spec.queue,
        submitter=new.submitter,
        tags=tags,
        state=RunState.SUBMITTING,
        spec=spec,
        spec_sha256=spec.spec_hash(),
        script=new.script,
        script_sha256=new.script_sha256,
        template_name=new.template_name,
        template_version=new.template_version,
        run_dir=new.run_dir,
        created_at=now,
        updated_at=now,
        attempts=[attempt],
        parent_run_id=new.parent_run_id,
        derived_diff=new.derived_diff,
        code=new.code,
        environment=new.environment,
        os_user=new.os_user,
        requested_by=new.requested_by,
    )
