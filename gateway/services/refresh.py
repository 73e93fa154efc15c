"""Following jobs: the periodic refresh and the crash-recovery reconciliation.

A refresh cycle makes at most two Slurm calls whatever the number of runs:
one ``squeue`` for every polled attempt, one ``sacct`` for those that left
the queue (or whose array tasks partly did). An attempt Slurm cannot answer
for keeps its last known state and is flagged stale; it never becomes
"failed" for want of an answer.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core.aggregate import array_state
from gateway.core.slurm_records import AccountingRecord, JobStatus
from gateway.core.states import TERMINAL, RunState
from gateway.domain import Attempt, AttemptUpdate
from gateway.errors import Conflict, GatewayError, SlurmUnavailable
from gateway.services.retry import RetryService
from gateway.settings import Settings
from gateway.store.repo import RunStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefreshReport:
    polled: int
    transitions: int
    stale: int
    slurm_calls: int


@dataclass(frozen=True)
class ReconcileReport:
    adopted: list[str]  # attempt tags found in Slurm
    never_submitted: list[str]  # attempt tags Slurm has never seen
    undecided: list[str]  # Slurm did not answer; still SUBMITTING


class Refresher:
    def __init__(
        self, store: RunStore, slurm: SlurmBackend, settings: Settings, retries: RetryService | None = None
    ) -> None:
        self.store = store
        self.slurm = slurm
        self.settings = settings
        self.retries = retries  # diagnoses failures and schedules retries (None: records states only)

    # -- the periodic cycle ----------------------------------------------------

    def refresh(self) -> RefreshReport:
        attempts = self.store.polled_attempts()
        if not attempts:
            return RefreshReport(0, 0, 0, 0)
        by_job = {a.job_id: a for a in attempts if a.job_id}
        calls = 1
        try:
            live = self.slurm.status(list(by_job))
        except SlurmUnavailable as exc:
            log.warning("squeue did not answer; %d attempts flagged stale: %s", len(by_job), exc)
            self.store.mark_stale([a.id for a in by_job.values()])
            return RefreshReport(len(by_job), 0, len(by_job), calls)

        queued: dict[str, list[JobStatus]] = defaultdict(list)
        for status in live:
            queued[status.array_job_id or status.job_id].append(status)

        updates: list[AttemptUpdate] = []
        ask_sacct: list[str] = []
        for job_id, attempt in by_job.items():
            statuses = queued.get(job_id, [])
            requeued = attempt.start_time is not None and statuses and statuses[0].state in WAITING
            if attempt.array_size is None and statuses and statuses[0].state not in TERMINAL and not requeued:
                updates.append(_from_squeue(attempt, statuses[0]))
            elif attempt.array_size is not None and len(statuses) >= attempt.array_size:
                update = _array_update(attempt, statuses, [])
                updates.append(update) if update else ask_sacct.append(job_id)
            else:
                ask_sacct.append(job_id)

        stale: list[int] = []
        requeues: list[tuple[Attempt, AccountingRecord]] = []
        if ask_sacct:
            calls += 1
            try:
                records = self.slurm.accounting(ask_sacct)
            except SlurmUnavailable as exc:
                log.warning("sacct did not answer; %d attempts flagged stale: %s", len(ask_sacct), exc)
                records = None
                stale.extend(by_job[j].id for j in ask_sacct)
            if records is not None:
                accounted: dict[str, list[AccountingRecord]] = defaultdict(list)
                for record in records:
                    accounted[record.array_job_id or record.job_id].append(record)
                for job_id in ask_sacct:
                    attempt = by_job[job_id]
                    found = [r for r in accounted.get(job_id, []) if _is_ours(r, attempt)]
                    if attempt.array_size is not None:
                        update = _array_update(attempt, queued.get(job_id, []), found)
                    elif len(found) > attempt.slurm_record + 1:
                        # Slurm requeued the job: this attempt's record has ended, the next one is
                        # a new attempt with the same job id.
                        update = _from_sacct(attempt, found[attempt.slurm_record])
                        if update is not None:
                            requeues.append((attempt, found[attempt.slurm_record + 1]))
                    elif found:
                        update = _from_sacct(attempt, found[-1])
                    else:
                        update = None  # left squeue, not in accounting yet (slurmdbd lags a little)
                    if update is None:
                        stale.append(attempt.id)
                    else:
                        updates.append(update)
        transitions = self.store.apply_updates(updates)
        self.store.mark_stale(stale)
        for attempt, record in requeues:
            transitions += self._requeued(attempt, record)
        ended = {a.id for a, _ in requeues}
        failed = [
            u.attempt_id
            for u in updates
            if u.state in TERMINAL and u.state is not RunState.SUCCEEDED and u.attempt_id not in ended
        ]
        if failed and self.retries is not None:
            for attempt in self.store.attempts(failed):
                try:
                    self.retries.diagnose(self.store.get_run(attempt.run_id), attempt)
                except GatewayError as exc:
                    log.warning("cannot diagnose %s attempt %d: %s", attempt.run_id, attempt.number, exc)
        return RefreshReport(len(by_job), transitions, len(stale), calls)

    def _requeued(self, attempt: Attempt, record: AccountingRecord) -> int:
        """Record Slurm's requeue of ``attempt``'s job as the next attempt, carrying the same job id."""
        try:
            new = self.store.add_attempt(
                attempt.run_id,
                tag=f"{attempt.tag.split(REQUEUE_MARK)[0]}{REQUEUE_MARK}{attempt.slurm_record + 1}",
                origin="requeue",
                after=attempt.number,
                job_id=attempt.job_id,
                slurm_record=attempt.slurm_record + 1,
            )
        except Conflict:
            return 0
        if self.retries is not None:
            self.retries.requeued(self.store.get_run(attempt.run_id), self.store.attempts([attempt.id])[0])
        update = _from_sacct(new, record)
        return 1 + (self.store.apply_updates([update]) if update else 0)

    # -- crash recovery --------------------------------------------------------

    def reconcile(self) -> ReconcileReport:
        """Settle attempts left SUBMITTING by a crash, by their tag in squeue/sacct.

        Only attempts older than ``submit_grace_s`` count as orphaned: that is
        longer than sbatch may take (the settings insist), so no process,
        this one or another ``gw serve`` on the same database, can still have
        their sbatch in flight. Younger ones are left for a later cycle.
        """
        cutoff = datetime.now(UTC) - timedelta(seconds=self.settings.submit_grace_s)
        adopted, never, undecided = [], [], []
        for attempt in self.store.submitting_attempts(created_before=cutoff):
            try:
                jobs = self.slurm.find_by_tag(attempt.tag, since=attempt.created_at - timedelta(hours=1))
            except SlurmUnavailable as exc:
                log.warning("cannot look up %s now (%s); it stays SUBMITTING", attempt.tag, exc)
                undecided.append(attempt.tag)
                continue
            if jobs:
                try:
                    self.store.record_job_id(attempt.id, jobs[0], source="reconcile")
                except Conflict:
                    continue  # the submitting process recorded it meanwhile
                if len(jobs) > 1:
                    self.store.add_note(
                        attempt.id,
                        f"more than one Slurm job carries this tag: {', '.join(jobs)}",
                        source="reconcile",
                    )
                adopted.append(attempt.tag)
            else:
                self.store.mark_never_submitted(
                    attempt.id,
                    "no Slurm job carries this attempt's tag: it was never submitted; safe to resubmit",
                    source="reconcile",
                )
                never.append(attempt.tag)
        return ReconcileReport(adopted, never, undecided)


# A requeue attempt's tag: the submission's tag (which its Slurm job still carries) + "~r" + N.
REQUEUE_MARK = "~r"
WAITING = (RunState.QUEUED, RunState.HELD)

# Slurm stamps submit times in whole seconds; allow for that and a little clock skew.
_SUBMIT_SLACK = timedelta(minutes=2)


def _is_ours(record: AccountingRecord, attempt: Attempt) -> bool:
    """Is this accounting record this attempt's job, not an older job that had the same id?

    Job ids repeat when a controller's state is wiped; the tag in the comment
    tells them apart. A requeued instance is accounted without its comment
    (Slurm 22.05), so a record with no comment counts when it is not older
    than the attempt.
    """
    if record.comment is not None:
        return record.comment == attempt.tag.split(REQUEUE_MARK)[0]
    return record.submit_time is None or record.submit_time >= attempt.created_at - _SUBMIT_SLACK


def _from_squeue(attempt: Attempt, status: JobStatus) -> AttemptUpdate:
    running = status.state is RunState.RUNNING
    fields: dict[str, Any] = {"node_list": status.node_list, "submit_time": status.submit_time}
    if running:
        fields["start_time"] = status.start_time
        fields["expected_start"] = None
    else:
        fields["expected_start"] = status.start_time
    return AttemptUpdate(
        attempt_id=attempt.id,
        state=status.state,
        slurm_state=status.slurm_state,
        reason=status.reason,
        event_at=status.start_time if running and status.start_time else None,
        source="squeue",
        fields=fields,
    )


def _settled(record: AccountingRecord) -> bool:
    """False for the placeholder slurmdbd shows for a moment after a job ends.

    Quirk (Slurm 22.05): for about half a second the record carries the name
    "allocation" and no time limit; every batch job has a time limit, so a
    finished record without one is read again on the next cycle.
    """
    return record.state not in TERMINAL or record.timelimit_min is not None


def _from_sacct(attempt: Attempt, record: AccountingRecord) -> AttemptUpdate | None:
    if not _settled(record):
        return None
    ended = record.state in TERMINAL
    return AttemptUpdate(
        attempt_id=attempt.id,
        state=record.state,
        slurm_state=record.slurm_state,
        reason=record.reason,
        event_at=record.end_time if ended else record.start_time,
        source="sacct",
        fields=_accounting_fields(record),
    )


def _accounting_fields(record: AccountingRecord) -> dict[str, Any]:
    return {
        "node_list": record.node_list,
        "submit_time": record.submit_time,
        "start_time": record.start_time,
        "end_time": record.end_time,
        "exit_code": record.exit_code,
        "exit_signal": record.exit_signal,
        "elapsed_s": record.elapsed_s,
        "alloc_tres": record.alloc_tres,
        "max_rss_kb": record.max_rss_kb,
        "cancelled_by_uid": record.cancelled_by_uid,
        "timelimit_min": record.timelimit_min,
        "expected_start": None,
    }


def _array_update(
    attempt: Attempt, statuses: list[JobStatus], records: list[AccountingRecord]
) -> AttemptUpdate | None:
    """Merge an array's tasks (squeue wins for live ones) into one attempt update."""
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
    pending_ranges = [r for r in records if r.array_task_id and r.array_task_id.startswith("[")]
    states = [RunState(t["state"]) for t in tasks.values()] + [r.state for r in pending_ranges]
    state = array_state(states, attempt.array_size or 0)
    if state is None:
        return None
    ended = [r for r in records if r.state in TERMINAL]
    fields: dict[str, Any] = {"tasks": tasks}
    if records:
        fields["submit_time"] = min((r.submit_time for r in records if r.submit_time), default=None)
        starts = [r.start_time for r in records if r.start_time]
        fields["start_time"] = min(starts) if starts else None
        if state in TERMINAL:
            fields["end_time"] = max((r.end_time for r in ended if r.end_time), default=None)
            fields["elapsed_s"] = sum(r.elapsed_s for r in records)
            codes = [t.get("exit_code") for t in tasks.values() if t.get("exit_code") is not None]
            fields["exit_code"] = max(codes) if codes else None
            fields["max_rss_kb"] = max((r.max_rss_kb for r in records if r.max_rss_kb), default=None)
    reason = next((s.reason for s in statuses if s.reason), None)
    return AttemptUpdate(
        attempt_id=attempt.id,
        state=state,
        slurm_state=None,
        reason=reason,
        event_at=fields.get("end_time") if state in TERMINAL else None,
        source="sacct" if records else "squeue",
        fields=fields,
    )
