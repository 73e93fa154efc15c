"""The run store: creating runs (each with its first attempt and event, in one transaction), with
the reads (``reads.py``), the idempotency keys (``keys.py``), the timeline writes (``timeline.py``)
and the attempt-level writes (``attempts.py``) mixed in.

Every method opens one unit of work (``Database.session``) and returns
domain values (``gateway.core.runs.values``), never ORM rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from sqlalchemy import Connection

from gateway.core.runs.idempotency import IdempotencyClaim
from gateway.core.runs.values import NewRun, Run, StateEvent
from gateway.core.slurm.states import RunState
from gateway.store.audit.audit import AuditEntry, append, append_many
from gateway.store.db import Database
from gateway.store.models import utcnow
from gateway.store.rows import (
    INSERT_ATTEMPT,
    INSERT_ATTEMPTS,
    INSERT_EVENT,
    INSERT_EVENTS_RETURNING,
    INSERT_INPUT,
    INSERT_RUN,
    INSERT_TAG,
    first_attempt_values,
    insert_key_once,
    new_run_value,
    run_values,
)
from gateway.store.runs.attempts import AttemptWrites
from gateway.store.runs.keys import IdempotencyKeys
from gateway.store.runs.reads import RunReads
from gateway.store.runs.timeline import TimelineWrites


class RunStore(RunReads, TimelineWrites, AttemptWrites, IdempotencyKeys):
    def __init__(self, db: Database) -> None:
        self.db = db
        self._insert_key = insert_key_once(db.dialect)

    def create_run(
        self, new: NewRun, *, audit: AuditEntry | None = None, claim: IdempotencyClaim | None = None
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
        self, session: Connection, batch: Sequence[tuple[NewRun, AuditEntry | None]], now: datetime
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
                    {"attempt_id": a, "at": now, "to_state": submitting, "source": "gateway"}
                    for a in attempt_ids
                ],
            )
            .scalars()
            .all()
        )
        append_many(session, [audit for _, audit in batch if audit is not None])
        runs = []
        for (new, _), run_tags, attempt_id, event_id in zip(batch, tags, attempt_ids, event_ids, strict=True):
            event = StateEvent(event_id, attempt_id, now, None, RunState.SUBMITTING, None, None, "gateway")
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
