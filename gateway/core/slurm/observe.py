"""What Slurm's answers mean for one attempt: squeue and sacct records -> ``AttemptUpdate`` values.

Pure functions the refresh cycle applies (``gateway.services.runs.refresh``):
``from_squeue`` for a job still in the queue, ``from_sacct`` for one that
left it (None while slurmdbd shows its placeholder record), ``array_update``
for a job array (squeue wins for live tasks), ``is_ours`` to tell an
attempt's record from an older job that had the same id.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from gateway.core.runs.values import KEEP, Attempt, AttemptFacts, AttemptUpdate, Keep
from gateway.core.slurm.array_state import array_state
from gateway.core.slurm.records import AccountingRecord, JobStatus
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.core.slurm.tags import job_comment, tag_of

# Slurm stamps submit times in whole seconds; allow for that and a little clock skew.
SUBMIT_SLACK = timedelta(minutes=2)


def is_ours(record: AccountingRecord, attempt: Attempt) -> bool:
    """Is this accounting record this attempt's job, not an older job that had the same id?

    Job ids repeat when a controller's state is wiped; the tag in the comment
    tells them apart. A requeued instance is accounted without its comment
    (Slurm 22.05), so a record with no comment counts when it is not older
    than the attempt.
    """
    if record.comment is not None:
        return tag_of(record.comment) == job_comment(attempt.tag)
    return record.submit_time is None or record.submit_time >= attempt.created_at - SUBMIT_SLACK


def from_squeue(attempt: Attempt, status: JobStatus) -> AttemptUpdate:
    """The update for a plain job squeue still shows (pending, held or running)."""
    running = status.state is RunState.RUNNING
    facts = AttemptFacts(
        node_list=status.node_list,
        submit_time=status.submit_time,
        start_time=status.start_time if running else KEEP,
        expected_start=None if running else status.start_time,
    )
    return AttemptUpdate(
        attempt_id=attempt.id,
        state=status.state,
        slurm_state=status.slurm_state,
        reason=status.reason,
        event_at=status.start_time if running and status.start_time else None,
        source="squeue",
        facts=facts,
    )


def moved(state_before: RunState, reason_before: str | None, state: RunState, reason: str | None) -> bool:
    """Whether an attempt going from (``state_before``, ``reason_before``) to (``state``, ``reason``) is a
    transition with an event of its own: its state or Slurm's reason changed (no reason, ``None`` or
    ``""``, is one and the same)."""
    return state_before is not state or (reason_before or None) != (reason or None)


def is_news(attempt: Attempt, update: AttemptUpdate) -> bool:
    """Whether writing ``update`` would change anything of ``attempt`` as the store holds it.

    A job that sits in the queue shows the same state, reason and facts cycle after cycle;
    such an update is dropped before the store, so a refresh cycle writes (and loads rows
    for) only the attempts that moved, not every live one. A stale flag, set or cleared,
    is always news.
    """
    if update.stale or attempt.stale:
        return True
    if (
        moved(attempt.state, attempt.reason, update.state, update.reason)
        or update.slurm_state != attempt.slurm_state
    ):
        return True
    return any(getattr(attempt, name) != value for name, value in update.facts.changes().items())


def settled(record: AccountingRecord) -> bool:
    """False for the placeholder slurmdbd shows for a moment after a job ends.

    Quirk (Slurm 22.05): for about half a second the record carries the name
    "allocation" and no time limit; every batch job has a time limit, so a
    finished record without one is read again on the next cycle.
    """
    return record.state not in TERMINAL or record.timelimit_min is not None


def from_sacct(attempt: Attempt, record: AccountingRecord) -> AttemptUpdate | None:
    """The update from one accounting record of a plain job; None while it is not settled."""
    if not settled(record):
        return None
    ended = record.state in TERMINAL
    return AttemptUpdate(
        attempt_id=attempt.id,
        state=record.state,
        slurm_state=record.slurm_state,
        reason=record.reason,
        event_at=record.end_time if ended else record.start_time,
        source="sacct",
        facts=accounting_facts(record),
    )


def accounting_facts(record: AccountingRecord) -> AttemptFacts:
    """Every accounted field of one record (the estimate of a start is gone once accounted). A start
    squeue saw is kept when the record has none yet (slurmdbd may not have heard of it when a
    requeue's first record is read)."""
    return AttemptFacts(
        node_list=record.node_list,
        submit_time=record.submit_time,
        start_time=record.start_time if record.start_time is not None else KEEP,
        end_time=record.end_time,
        exit_code=record.exit_code,
        exit_signal=record.exit_signal,
        elapsed_s=record.elapsed_s,
        alloc_tres=record.alloc_tres,
        max_rss_kb=record.max_rss_kb,
        cancelled_by_uid=record.cancelled_by_uid,
        timelimit_min=record.timelimit_min,
        expected_start=None,
    )


def array_update(
    attempt: Attempt, statuses: Sequence[JobStatus], records: Sequence[AccountingRecord]
) -> AttemptUpdate | None:
    """Merge an array's tasks (squeue wins for live ones) into one attempt update.

    None when the tasks seen so far do not yet say the array's state (some not
    accounted and not in the queue).
    """
    tasks = _merged_tasks(attempt, statuses, records)
    pending_ranges = [r for r in records if r.array_task_id and r.array_task_id.startswith("[")]
    states = [RunState(t["state"]) for t in tasks.values()] + [r.state for r in pending_ranges]
    state = array_state(states, attempt.array_size or 0)
    if state is None:
        return None
    facts = _array_facts(tasks, records, ended=state in TERMINAL)
    reason = next((s.reason for s in statuses if s.reason), None)
    return AttemptUpdate(
        attempt_id=attempt.id,
        state=state,
        slurm_state=None,
        reason=reason,
        event_at=facts.end_time if state in TERMINAL and not isinstance(facts.end_time, Keep) else None,
        source="sacct" if records else "squeue",
        facts=facts,
    )


def _merged_tasks(
    attempt: Attempt, statuses: Sequence[JobStatus], records: Sequence[AccountingRecord]
) -> dict[str, dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = {k: dict(v) for k, v in attempt.tasks.items()}
    for record in records:
        if record.array_task_id and not record.array_task_id.startswith("["):
            tasks[record.array_task_id] = {
                "state": record.state.value,
                "slurm_state": record.slurm_state,
                "job_id": record.job_id_raw,
                "exit_code": record.exit_code,
                "exit_signal": record.exit_signal,
                "elapsed_s": record.elapsed_s,
                "node_list": record.node_list,
                "max_rss_kb": record.max_rss_kb,
            }
    for status in statuses:
        if status.array_task_id and not status.array_task_id.startswith("["):
            tasks[status.array_task_id] = {
                **tasks.get(status.array_task_id, {}),
                "state": status.state.value,
                "slurm_state": status.slurm_state,
                "reason": status.reason,
                "node_list": status.node_list,
            }
    return tasks


def _array_facts(
    tasks: dict[str, dict[str, Any]], records: Sequence[AccountingRecord], *, ended: bool
) -> AttemptFacts:
    """The whole array's times and totals, from its tasks' records (and nothing when none yet)."""
    if not records:
        return AttemptFacts(tasks=tasks)
    starts = [r.start_time for r in records if r.start_time]
    submit_time = min((r.submit_time for r in records if r.submit_time), default=None)
    if not ended:
        return AttemptFacts(tasks=tasks, submit_time=submit_time, start_time=min(starts) if starts else None)
    codes = [code for t in tasks.values() if (code := t.get("exit_code")) is not None]
    worst = max(
        (t for t in tasks.values() if t.get("exit_code") is not None),
        key=lambda t: t["exit_code"],
        default=None,
    )
    start = min(starts) if starts else None
    end = max((r.end_time for r in records if r.state in TERMINAL and r.end_time), default=None)
    return AttemptFacts(
        tasks=tasks,
        submit_time=submit_time,
        start_time=start,
        end_time=end,
        # the array's wall-clock span, first start to last end: its tasks run side by side, so the sum
        # of their elapsed times is no time anyone waited (each task's own is in ``tasks``); while
        # slurmdbd has no start for a record yet, the longest task's (the least the span can be)
        elapsed_s=(
            int((end - start).total_seconds())
            if start and end
            else max((r.elapsed_s for r in records), default=None)
        ),
        exit_code=max(codes) if codes else None,
        exit_signal=worst.get("exit_signal") if worst else None,
        max_rss_kb=max((r.max_rss_kb for r in records if r.max_rss_kb), default=None),
    )
