"""Timeline writes of the run store: a job id recorded for a submitted attempt, and what a refresh
learned from Slurm (attempt states, their events, the runs' states)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from gateway.core.runs.values import AttemptUpdate, StateEvent
from gateway.core.slurm.observe import moved
from gateway.core.slurm.states import RunState
from gateway.errors import Conflict
from gateway.store.db import Database
from gateway.store.models import utcnow
from gateway.store.rows import (
    CURRENT_STATES,
    INSERT_EVENT,
    INSERT_EVENTS,
    INSERT_EVENTS_RETURNING,
    RECORD_JOB_ID,
    RECORD_JOB_IDS,
    SET_RUN_STATE,
    STILL_SUBMITTING,
    set_run_state,
    update_attempt,
    update_attempt_params,
)


class TimelineWrites:
    """Mixed into RunStore: the writes that move attempts along their timeline."""

    db: Database

    def record_job_id(self, attempt_id: int, job_id: str, *, source: str = "gateway") -> StateEvent:
        """Store the Slurm job id of a SUBMITTING attempt; it becomes QUEUED. Returns the event.

        The update only applies to an attempt still SUBMITTING, so the submit
        path and a reconciliation can never both record a job for it
        (Conflict for the loser).
        """
        now = utcnow()
        queued = RunState.QUEUED.value
        with self.db.transaction(writes=True) as session:
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

    def record_job_ids(self, pairs: Sequence[tuple[int, str]], *, source: str) -> dict[int, StateEvent]:
        """``record_job_id`` for many SUBMITTING attempts (attempt id, job id) in one transaction; the
        events by attempt id. An attempt no longer SUBMITTING is left out (reconciled already)."""
        if not pairs:
            return {}
        now = utcnow()
        submitting, queued = RunState.SUBMITTING.value, RunState.QUEUED.value
        jobs = dict(pairs)
        with self.db.transaction(writes=True) as session:
            # The attempts still SUBMITTING, locked (PostgreSQL; SQLite's write lock is held already),
            # so a reconciliation cannot settle one between this read and the update.
            still = session.execute(STILL_SUBMITTING, {"ids": list(jobs), "state": submitting}).all()
            recorded = [(row.id, row.run_id, row.number) for row in still]
            if recorded:
                session.execute(
                    RECORD_JOB_IDS,
                    [
                        {
                            "attempt_id": a,
                            "from_state": submitting,
                            "job_id": jobs[a],
                            "to_state": queued,
                            "now": now,
                        }
                        for a, _, _ in recorded
                    ],
                )
            if not recorded:
                return {}
            event_ids = (
                session.execute(
                    INSERT_EVENTS_RETURNING,
                    [
                        {
                            "attempt_id": a,
                            "at": now,
                            "from_state": submitting,
                            "to_state": queued,
                            "slurm_state": "PENDING",
                            "source": source,
                        }
                        for a, _, _ in recorded
                    ],
                )
                .scalars()
                .all()
            )
            session.execute(
                SET_RUN_STATE,
                [{"run_id": r, "number": n, "state": queued, "now": now} for _, r, n in recorded],
            )
        return {
            a: StateEvent(e, a, now, RunState.SUBMITTING, RunState.QUEUED, "PENDING", None, source)
            for (a, _, _), e in zip(recorded, event_ids, strict=True)
        }

    def apply_updates(self, updates: Iterable[AttemptUpdate]) -> int:
        """Write what a refresh learned; returns how many transitions were recorded.

        An event is recorded (and the run's state set) when an attempt's state or reason changed.
        Plain statements, batched: one read of the attempts' current states, then the attempts'
        updates grouped by the columns they write, the events and the runs' states as one
        executemany each. A refresh after a burst writes a thousand transitions in one cycle.
        """
        updates = list(updates)
        if not updates:
            return 0
        now = utcnow()
        writes: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        events: list[dict[str, Any]] = []
        runs: list[dict[str, Any]] = []
        with self.db.transaction(writes=True) as session:
            current = {
                row.id: row._asdict()
                for row in session.execute(CURRENT_STATES, {"ids": list({u.attempt_id for u in updates})})
            }
            for update in updates:
                row = current.get(update.attempt_id)
                if row is None:
                    continue
                values = {**update.facts.changes(), "stale": update.stale}
                if update.stale:
                    values["updated_at"] = now
                else:
                    values.update(slurm_state=update.slurm_state, reason=update.reason)
                    previous = RunState(row["state"])
                    if moved(previous, row["reason"], update.state, update.reason):
                        values["state"] = update.state.value
                        events.append(
                            {
                                "attempt_id": update.attempt_id,
                                "at": update.event_at or now,
                                "from_state": previous.value,
                                "to_state": update.state.value,
                                "slurm_state": update.slurm_state,
                                "reason": update.reason,
                                "source": update.source,
                            }
                        )
                        runs.append(
                            {"run_id": row["run_id"], "number": row["number"], "state": update.state.value}
                        )
                    # the next update of the same attempt in this batch starts from this one
                    row.update(state=update.state.value, reason=update.reason)
                writes[tuple(sorted(values))].append(update_attempt_params(update.attempt_id, values))
            for columns, params in writes.items():
                session.execute(update_attempt(columns), params)
            if events:
                session.execute(INSERT_EVENTS, events)
            if runs:
                session.execute(SET_RUN_STATE, [{**r, "now": now} for r in runs])
        return len(events)
