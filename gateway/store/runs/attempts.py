"""Attempt-level writes of the run store: notes, stale flags, failures, retries and requeues."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select

from gateway.core.runs.values import Attempt
from gateway.core.slurm.states import RunState
from gateway.errors import Conflict
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.models import AttemptRow, StateEventRow, utcnow
from gateway.store.rows import MARK_STALE, attempt_row, set_run_state, to_attempt, transition


class AttemptWrites:
    """Mixed into RunStore: the writes that touch one attempt at a time."""

    db: Database

    def set_failure(self, attempt_id: int, failure: dict, *, retry_at: datetime | None = None) -> None:
        """Record why an attempt failed, and when (if at all) the retry policy resubmits it."""
        with self.db.session() as session:
            row = attempt_row(session, attempt_id)
            row.failure = failure
            row.retry_at = retry_at

    def due_retries(self, now: datetime) -> list[Attempt]:
        """Failed attempts whose retry is due, oldest first."""
        with self.db.session() as session:
            query = (
                select(AttemptRow)
                .where(AttemptRow.retry_at.is_not(None), AttemptRow.retry_at <= now)
                .order_by(AttemptRow.retry_at)
            )
            return [to_attempt(r) for r in session.scalars(query)]

    def add_attempt(
        self,
        run_id: str,
        *,
        tag: str,
        origin: str,
        after: int,
        job_id: str | None = None,
        slurm_record: int = 0,
        excluded_nodes: list[str] | None = None,
        cluster: str | None = None,
        audit: AuditEntry | None = None,
    ) -> Attempt:
        """A new attempt of ``run_id`` after attempt ``after`` (which gives up its pending retry).

        ``origin`` "retry": SUBMITTING, with a fresh tag, to be submitted next (exactly once, as
        a first attempt is). ``origin`` "requeue": Slurm requeued the same job id, so the attempt
        carries it, QUEUED, and the one before is superseded. ``origin`` "resubmit": a job the run
        itself submitted (its script resubmitted from inside the job), QUEUED with its own job id.
        The run's state follows the new
        attempt. ``cluster``: where its job is (a retry: its queue's cluster now); None: the one
        attempt ``after``'s job was on. Raises Conflict when attempt ``after`` is no longer the latest.
        """
        now = utcnow()
        state = RunState.QUEUED if origin in ("requeue", "resubmit") else RunState.SUBMITTING
        with self.db.session() as session:
            previous = session.scalar(
                select(AttemptRow).where(AttemptRow.run_id == run_id, AttemptRow.number == after)
            )
            latest = session.scalar(select(func.max(AttemptRow.number)).where(AttemptRow.run_id == run_id))
            if previous is None or latest != after:
                raise Conflict(f"attempt {after} of run {run_id} is not the latest; nothing added")
            previous.retry_at = None
            if origin == "requeue":
                previous.superseded = True
            row = AttemptRow(
                run_id=run_id,
                number=after + 1,
                tag=tag,
                job_id=job_id,
                state=state.value,
                slurm_state="PENDING" if job_id else None,
                origin=origin,
                slurm_record=slurm_record,
                excluded_nodes=excluded_nodes,
                alloc_tres={},
                tasks={},
                array_size=previous.array_size,
                cluster=cluster if cluster is not None else previous.cluster,
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            session.add(
                StateEventRow(attempt_id=row.id, at=now, from_state=None, to_state=state.value, source=origin)
            )
            set_run_state(session, run_id, row.number, state.value)
            if audit is not None:
                append(session, audit)
            session.flush()
            return to_attempt(row, with_events=True)

    def add_note(self, attempt_id: int, note: str, *, source: str, audit: AuditEntry | None = None) -> None:
        """Record an event that changes no state (a cancel request, a warning)."""
        with self.db.session() as session:
            if audit is not None:
                append(session, audit)
            row = attempt_row(session, attempt_id)
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
        with self.db.transaction(writes=True) as session:
            session.execute(MARK_STALE, {"ids": list(attempt_ids), "now": utcnow()})

    def mark_never_submitted(self, attempt_id: int, reason: str, *, source: str) -> Attempt:
        """Move an attempt to NEVER_SUBMITTED (sbatch refused it, or recovery found no job), with an
        event saying ``reason`` and ``source``; the attempt with its events. NotFound for an unknown id.
        """
        with self.db.session() as session:
            row = attempt_row(session, attempt_id)
            transition(
                session,
                row,
                RunState.NEVER_SUBMITTED,
                slurm_state=None,
                reason=reason,
                source=source,
                at=utcnow(),
            )
            return to_attempt(row, with_events=True)
