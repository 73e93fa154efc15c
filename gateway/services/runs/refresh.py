"""Following jobs: the periodic refresh and the crash-recovery reconciliation.

A refresh cycle makes at most three Slurm calls per cluster whatever the number
of runs: one ``squeue`` for every polled attempt on that cluster, one
``sacct`` for those that left the queue (or whose array tasks partly did),
and, in a cycle that saw jobs end, one ``squeue`` of the cluster's live jobs
for the jobs those runs submitted themselves (a script that resubmits itself:
adopted as the run's next attempt, origin ``resubmit``).
Job ids are unique per cluster only, so each attempt is asked of its own
cluster's backend and matched there alone. An attempt Slurm cannot answer for
keeps its last known state and is flagged stale; it never becomes "failed"
for want of an answer. A cluster whose squeue does not answer is marked down
in the registry (its queues refuse submissions) until it answers again; the
other clusters' attempts are refreshed as usual (docs/clusters.md).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import ClusterSlurm
from gateway.core.runs.values import Attempt, AttemptUpdate
from gateway.core.slurm.observe import array_update, from_sacct, from_squeue, is_news, is_ours
from gateway.core.slurm.records import AccountingRecord, JobStatus
from gateway.core.slurm.states import TERMINAL, WAITING, RunState
from gateway.core.slurm.tags import requeue_tag, resubmit_comment, resubmit_tag, tag_of
from gateway.errors import Conflict, GatewayError, NotFound, SlurmError, SlurmUnavailable
from gateway.services.runs.retry import RetryService
from gateway.settings import Settings
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefreshReport:
    polled: int
    transitions: int
    stale: int
    slurm_calls: int
    down: tuple[str, ...] = ()  # the clusters whose Slurm did not answer this cycle

    def __add__(self, other: RefreshReport) -> RefreshReport:
        return RefreshReport(
            self.polled + other.polled,
            self.transitions + other.transitions,
            self.stale + other.stale,
            self.slurm_calls + other.slurm_calls,
            self.down + other.down,
        )


@dataclass(frozen=True)
class ReconcileReport:
    adopted: list[str]  # attempt tags found in Slurm
    never_submitted: list[str]  # attempt tags Slurm has never seen
    undecided: list[str]  # Slurm did not answer; still SUBMITTING


class Refresher:
    def __init__(
        self,
        store: RunStore,
        clusters: SlurmClusters,
        settings: Settings,
        retries: RetryService | None = None,
    ) -> None:
        self.store = store
        self.clusters = clusters
        self.settings = settings
        self.retries = retries  # diagnoses failures and schedules retries (None: records states only)

    # -- the periodic cycle ----------------------------------------------------

    def refresh(self) -> RefreshReport:
        """One cycle, cluster by cluster: squeue for every polled attempt, sacct for those that left
        the queue.

        Writes what changed (state, reason, accounting), flags the attempts
        Slurm did not answer for as stale, adds the attempt a Slurm requeue
        starts, and diagnoses attempts that ended without succeeding. A
        cluster no longer listed in the site file cannot be asked: its
        attempts are flagged stale.
        """
        attempts = self.store.polled_attempts()
        if not attempts:
            return RefreshReport(0, 0, 0, 0)
        names = self.clusters.names()
        by_cluster: dict[str, list[Attempt]] = defaultdict(list)
        # Each recorded cluster named once per cycle: every name_of reads the site's clusters (a
        # read of the access generation), which per attempt made the cycle's cost grow with them.
        named: dict[str | None, str] = {}
        for attempt in attempts:
            if attempt.cluster not in named:
                named[attempt.cluster] = self.clusters.name_of(attempt.cluster)
            by_cluster[named[attempt.cluster]].append(attempt)
        report = RefreshReport(0, 0, 0, 0)
        for name, group in by_cluster.items():
            if name not in names:
                log.warning("cluster %s is not in the site file; %d attempts flagged stale", name, len(group))
                self.store.mark_stale([a.id for a in group])
                report += RefreshReport(len(group), 0, len(group), 0)
                continue
            report += self._refresh_cluster(name, self.clusters.get(name), group)
        return report

    def _refresh_cluster(self, name: str, slurm: ClusterSlurm, attempts: list[Attempt]) -> RefreshReport:
        """One cycle on cluster ``name`` for its polled ``attempts``: at most two calls."""
        by_job = {a.job_id: a for a in attempts if a.job_id}
        try:
            live = slurm.status(list(by_job))
        except SlurmUnavailable as exc:
            log.warning("squeue on %s did not answer; %d attempts flagged stale: %s", name, len(by_job), exc)
            self.clusters.mark_down(name, str(exc))
            self.store.mark_stale([a.id for a in by_job.values()])
            return RefreshReport(len(by_job), 0, len(by_job), 1, (name,))
        self.clusters.mark_up(name)
        queued: dict[str, list[JobStatus]] = defaultdict(list)
        for status in live:
            queued[status.array_job_id or status.job_id].append(status)
        cycle = _Cycle()
        for job_id, attempt in by_job.items():
            _read_squeue(cycle, attempt, queued.get(job_id, []))
        calls = 1
        if cycle.ask_sacct:
            calls += 1
            self._read_sacct(slurm, cycle, by_job, queued)
        by_id = {a.id: a for a in attempts}
        # Only what moved is written: a job waiting in the queue says the same every cycle.
        transitions = self.store.apply_updates([u for u in cycle.updates if is_news(by_id[u.attempt_id], u)])
        self.store.mark_stale(cycle.stale)
        for attempt, record in cycle.requeues:
            transitions += self._requeued(attempt, record)
        if transitions:
            slurm.forget()  # jobs started or ended: the cached cluster facts are old now
        ended = [
            by_id[u.attempt_id]
            for u in cycle.updates
            if u.state in TERMINAL and is_news(by_id[u.attempt_id], u)
        ]
        if ended:
            calls += 1
            transitions += self._adopt_resubmissions(name, slurm, ended)
        self._diagnose_failed(cycle)
        return RefreshReport(len(by_job), transitions, len(cycle.stale), calls)

    def _adopt_resubmissions(self, name: str, slurm: ClusterSlurm, ended: list[Attempt]) -> int:
        """Jobs that the runs of the ``ended`` attempts submitted themselves (their script resubmitted
        from inside the job: its comment is the run's ``resubmit_comment``), found in one squeue of
        the jobs the controller holds, each recorded as its run's next attempt; how many were.

        A resubmission is queued while its job still runs, and the controller keeps an ended job
        for MinJobAge (300 s by default), so it is found unless the cycle that sees its job end
        comes later than that (docs/cli.md, "A job that resubmits itself"). When Slurm does not
        answer, nothing is adopted (and nothing flagged).
        """
        wanted = {resubmit_comment(a.run_id): a for a in ended}
        try:
            held = slurm.comments()
        except (SlurmUnavailable, SlurmError) as exc:
            log.warning(
                "squeue on %s did not answer; resubmissions of %d runs not looked for: %s",
                name,
                len(ended),
                exc,
            )
            return 0
        found: dict[str, list[str]] = defaultdict(list)  # run id -> its resubmitted jobs
        for job_id, comment in held:
            attempt = wanted.get(tag_of(comment))
            if attempt is not None:
                found[attempt.run_id].append(job_id)
        adopted = 0
        for run_id, job_ids in found.items():
            run = self.store.get_run(run_id)
            known = {a.job_id for a in run.attempts}
            latest = run.attempts[-1].number
            for job_id in sorted((j for j in job_ids if j not in known), key=int):
                try:
                    self.store.add_attempt(
                        run_id,
                        tag=resubmit_tag(run_id, job_id),
                        origin="resubmit",
                        after=latest,
                        job_id=job_id,
                    )
                except Conflict:
                    break  # the run moved on meanwhile (a retry, another cycle)
                latest += 1
                adopted += 1
        return adopted

    def _read_sacct(
        self,
        slurm: ClusterSlurm,
        cycle: _Cycle,
        by_job: dict[str, Attempt],
        queued: dict[str, list[JobStatus]],
    ) -> None:
        """One sacct call for the attempts squeue did not settle; their updates go into ``cycle``."""
        try:
            records = slurm.accounting(cycle.ask_sacct)
        except SlurmUnavailable as exc:
            log.warning("sacct did not answer; %d attempts flagged stale: %s", len(cycle.ask_sacct), exc)
            cycle.stale.extend(by_job[j].id for j in cycle.ask_sacct)
            return
        accounted: dict[str, list[AccountingRecord]] = defaultdict(list)
        for record in records:
            accounted[record.array_job_id or record.job_id].append(record)
        for job_id in cycle.ask_sacct:
            attempt = by_job[job_id]
            found = [r for r in accounted.get(job_id, []) if is_ours(r, attempt)]
            if attempt.array_size is not None:
                update = array_update(attempt, queued.get(job_id, []), found)
            elif len(found) > attempt.slurm_record + 1:
                # Slurm requeued the job: this attempt's record has ended, the next one is a new
                # attempt with the same job id.
                update = from_sacct(attempt, found[attempt.slurm_record])
                if update is not None:
                    cycle.requeues.append((attempt, found[attempt.slurm_record + 1]))
            elif found:
                update = from_sacct(attempt, found[-1])
            else:
                update = None  # left squeue, not in accounting yet (slurmdbd lags a little)
            if update is None:
                cycle.stale.append(attempt.id)
            else:
                cycle.updates.append(update)

    def _diagnose_failed(self, cycle: _Cycle) -> None:
        """Classify every attempt this cycle saw end without succeeding (a requeue is not one)."""
        if self.retries is None:
            return
        requeued = {a.id for a, _ in cycle.requeues}
        failed = [
            u.attempt_id
            for u in cycle.updates
            if u.state in TERMINAL and u.state is not RunState.SUCCEEDED and u.attempt_id not in requeued
        ]
        if not failed:
            return
        for attempt in self.store.attempts(failed):
            try:
                self.retries.diagnose(self.store.get_run(attempt.run_id), attempt)
            except GatewayError as exc:
                log.warning("cannot diagnose %s attempt %d: %s", attempt.run_id, attempt.number, exc)

    def _requeued(self, attempt: Attempt, record: AccountingRecord) -> int:
        """Record Slurm's requeue of ``attempt``'s job as the next attempt, carrying the same job id."""
        try:
            new = self.store.add_attempt(
                attempt.run_id,
                tag=requeue_tag(attempt.tag, attempt.slurm_record + 1),
                origin="requeue",
                after=attempt.number,
                job_id=attempt.job_id,
                slurm_record=attempt.slurm_record + 1,
            )
        except Conflict:
            return 0
        if self.retries is not None:
            self.retries.requeued(self.store.get_run(attempt.run_id), self.store.attempts([attempt.id])[0])
        update = from_sacct(new, record)
        return 1 + (self.store.apply_updates([update]) if update else 0)

    # -- crash recovery --------------------------------------------------------

    def reconcile(self) -> ReconcileReport:
        """Settle attempts left SUBMITTING by a crash, by their tag in squeue/sacct.

        Only attempts older than ``submit_grace_s`` count as orphaned: that is
        longer than sbatch may take (the settings insist), so no process,
        this one or another ``gw serve`` on the same database, can still have
        their sbatch in flight. Younger ones are left for a later cycle. A
        cluster that does not answer one lookup is not asked about its other
        attempts in this pass (they stay SUBMITTING, for the next pass): a
        stuck daemon costs one time limit per pass, not one per attempt.
        """
        cutoff = datetime.now(UTC) - timedelta(seconds=self.settings.submit_grace_s)
        adopted, never, undecided = [], [], []
        silent: set[str] = set()  # clusters that did not answer in this pass: not asked again in it
        for attempt in self.store.submitting_attempts(created_before=cutoff):
            name = self.clusters.name_of(attempt.cluster)
            if name in silent:
                undecided.append(attempt.tag)
                continue
            try:
                slurm = self.clusters.get(name)
                jobs = slurm.find_by_tag(attempt.tag, since=attempt.created_at - timedelta(hours=1))
            except (SlurmUnavailable, NotFound) as exc:
                log.warning("cannot look up %s now (%s); it stays SUBMITTING", attempt.tag, exc)
                undecided.append(attempt.tag)
                if isinstance(exc, SlurmUnavailable):  # each lookup would wait its full time limit
                    silent.add(name)
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


@dataclass
class _Cycle:
    """What one refresh cycle has learned so far."""

    updates: list[AttemptUpdate] = field(default_factory=list)
    ask_sacct: list[str] = field(default_factory=list)  # job ids squeue did not settle
    stale: list[int] = field(default_factory=list)  # attempt ids Slurm did not answer for
    requeues: list[tuple[Attempt, AccountingRecord]] = field(default_factory=list)


def _read_squeue(cycle: _Cycle, attempt: Attempt, statuses: list[JobStatus]) -> None:
    """Settle ``attempt`` from squeue when its answer is enough; else ask sacct about it."""
    requeued = attempt.start_time is not None and statuses and statuses[0].state in WAITING
    if attempt.array_size is None and statuses and statuses[0].state not in TERMINAL and not requeued:
        cycle.updates.append(from_squeue(attempt, statuses[0]))
        return
    if attempt.array_size is not None and len(statuses) >= attempt.array_size:
        update = array_update(attempt, statuses, [])
        if update is not None:
            cycle.updates.append(update)
            return
    cycle.ask_sacct.append(attempt.job_id or "")
