"""After a failure: why it failed (the failure class, with evidence), and the retry policy.

When an attempt ends without succeeding, ``diagnose`` reads the job's step
records and the tail of its stderr from the run directory, classifies the
failure (``gateway.core.runs.failures``) and records it; the retry policy of the
run's queue (``gateway.core.runs.retry``) then says whether and when a new attempt
follows. ``process_due`` submits the retries that are due, each exactly once
through the one submission path (``gateway.services.runs.submission``: sbatch
prepared, attempt row committed, tag in ``--comment``, job id after;
reconciliation settles a crash in between, as for a first submission).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.core.audit.entry import AuditEntry
from gateway.core.explain.text import expand_hostlist
from gateway.core.runs.failure_classes import FailureClass
from gateway.core.runs.failures import EndedAttempt, classify, who_cancelled
from gateway.core.runs.retry import RetryPolicy, decide
from gateway.core.runs.steps import StepRecord, parse_steps
from gateway.core.runs.values import Attempt, Run
from gateway.core.slurm.states import RunState
from gateway.core.slurm.tags import attempt_tag
from gateway.errors import (
    Conflict,
    GatewayError,
    NotFound,
    RunHostError,
    SlurmUnavailable,
    SpecError,
    SubmitRejected,
)
from gateway.services.runs.logs import JobFiles
from gateway.services.runs.submission import Submission, script_file, write_script_file
from gateway.store.access.access import AccessStore
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)
REQUEUED_BY_SLURM = "Slurm requeued the job itself (same job id)"


class RetryService:
    def __init__(
        self,
        store: RunStore,
        access: AccessStore,
        clusters: SlurmClusters,
        files: JobFiles,
        *,
        by_path: bool = True,
    ) -> None:
        self.by_path = by_path  # sbatch reads the run's script file (Settings.slurm_submit_by_path)
        self.store = store
        self.access = access
        self.clusters = clusters  # a retry goes to the cluster its failed attempt ran on
        self.files = files

    # -- why it failed ------------------------------------------------------------

    def diagnose(self, run: Run, attempt: Attempt, *, now: datetime | None = None) -> dict | None:
        """Classify a failed attempt, record the failure and schedule a retry per policy."""
        now = now or datetime.now(UTC)
        if attempt.state is RunState.SUCCEEDED or attempt.failure is not None:
            return attempt.failure
        steps_text, stderr_tail = self.files.failure_evidence(run, attempt)
        known = _ended(run, attempt, steps=parse_steps(steps_text), stderr_tail=stderr_tail)
        if attempt.state is RunState.CANCELLED:
            known = replace(known, cancelled_by=self._who_cancelled(run, attempt))
        info = classify(known)
        if info is None:
            return None
        decision = decide(
            failure_class=info.klass,
            attempt_number=attempt.number,
            policy=self._policy(run),
            resumable=run.spec.resumable,
            failed_nodes=list(expand_hostlist(attempt.node_list or "")),
        )
        failure = {
            "class": info.klass.value,
            "summary": info.summary,
            "action": info.action,
            "evidence": info.evidence,
            "retry": {"retry": decision.retry, "why": decision.why, "exclude_nodes": decision.exclude_nodes},
        }
        ended = attempt.end_time or now
        retry_at = ended + timedelta(seconds=decision.after_s) if decision.retry else None
        self.store.set_failure(attempt.id, failure, retry_at=retry_at)
        return failure

    def requeued(self, run: Run, attempt: Attempt) -> None:
        """Record why Slurm requeued ``attempt``'s job; Slurm already retries it, so the gateway does not."""
        info = classify(_ended(run, attempt, steps=[], stderr_tail=""))
        if info is not None:
            klass, summary, evidence = info.klass, info.summary, info.evidence
        else:
            node_failed = attempt.state is RunState.NODE_FAILED
            klass = FailureClass.NODE_FAILURE if node_failed else FailureClass.PREEMPTED
            summary, evidence = "Slurm requeued the job", {"node_list": attempt.node_list}
        failure = {
            "class": klass.value,
            "summary": summary,
            "action": "none: Slurm requeued the job and it runs again as the next attempt",
            "evidence": evidence,
            "retry": {
                "retry": False,
                "why": "Slurm requeued the job itself (same job id)",
                "exclude_nodes": [],
            },
        }
        self.store.set_failure(attempt.id, failure)

    def _who_cancelled(self, run: Run, attempt: Attempt) -> str | None:
        """The gateway user whose cancel the attempt's timeline records, else the uid Slurm recorded,
        named by the run's OS user where the uid is that user's (``who_cancelled``)."""
        names = {}
        if attempt.cancelled_by_uid is not None and run.os_user:
            account = self.files.host.account(run.os_user)
            if account is not None:
                names[account.uid] = account.name
        # ``attempt`` may come without its events (RunStore.attempts); the run read afresh has them
        events = next((a.events for a in run.attempts if a.id == attempt.id), None) or attempt.events
        return who_cancelled([e.reason for e in events], attempt.cancelled_by_uid, names)

    def _policy(self, run: Run) -> RetryPolicy:
        """The queue's retry policy, with the run's own ``retry`` settings over it."""
        try:
            queue = self.access.project(run.project).queue(run.queue)
        except NotFound:
            queue = None
        merged = dict(queue.retry or {}) if queue else {}
        own = run.spec.retry.model_dump() if run.spec.retry else {}
        merged.update({k: v for k, v in own.items() if v is not None})
        return RetryPolicy.from_dict(merged or None)

    # -- retries that are due -----------------------------------------------------

    def process_due(self, *, now: datetime | None = None) -> list[str]:
        """Submit every retry whose time has come; returns the new attempts' tags."""
        now = now or datetime.now(UTC)
        submitted = []
        for attempt in self.store.due_retries(now):
            try:
                tag = self._retry(attempt)
            except Conflict:
                continue  # a later attempt exists already (another process retried it)
            except GatewayError as exc:
                log.warning("retry of %s attempt %d failed: %s", attempt.run_id, attempt.number, exc)
                continue
            if tag:
                submitted.append(tag)
        return submitted

    def _retry(self, failed: Attempt) -> str | None:
        """The next attempt of ``failed``'s run, submitted as a first attempt is (``Submission``: sbatch
        prepared, the attempt committed, then sent); its tag, or None when it was never submitted.

        Raises Conflict when a later attempt exists already (nothing is queued then).
        """
        cluster = self.clusters.name_of(failed.cluster)
        down = self.clusters.down(cluster) if self.clusters.listed() else None
        if down is not None:  # stays due: retried once the cluster answers again
            raise SlurmUnavailable(f"cluster {cluster} is not answering (since {down.since:%H:%M:%S} UTC)")
        run = self.store.get_run(failed.run_id)
        exclude = list((failed.failure or {}).get("retry", {}).get("exclude_nodes") or [])
        user = self.access.user(run.submitter)
        tag = attempt_tag(run.id, failed.number + 1)
        if not user.os_user:
            attempt = self._add_attempt(run, failed, tag, exclude)
            self.store.mark_never_submitted(
                attempt.id, "the submitter has no OS user any more", source="retry"
            )
            return None
        try:
            # the run's script file again, as the job's user (the first submission wrote it; a run
            # directory tidied since, or a run from before the file, has none)
            if self.by_path:
                write_script_file(self.files.host, replace(run, os_user=run.os_user or user.os_user))
            submission = Submission.prepare(
                self.clusters.get(cluster),
                self.store,
                tag=tag,
                as_user=user.os_user,
                exclude_nodes=exclude,
                comment=run.spec.comment,
                mail_user=run.spec.mail_user,
                script_path=script_file(run.run_dir) if self.by_path else None,
            )
        except (SpecError, RunHostError) as exc:  # a node to keep off that is no Slurm name, a run
            # directory the job's user cannot write: this retry cannot be sent
            attempt = self._add_attempt(run, failed, tag, exclude)
            self.store.mark_never_submitted(attempt.id, f"cannot submit the retry: {exc}", source="retry")
            return None
        with submission.abandoned_on_error():
            attempt = self._add_attempt(run, failed, tag, exclude)
        try:
            submission.send(attempt, run.script, source="retry")
        except SubmitRejected:
            return None
        return tag

    def _add_attempt(self, run: Run, failed: Attempt, tag: str, exclude: list[str]) -> Attempt:
        """Commit the retry's attempt (SUBMITTING, ``tag``) with its ``run.retry`` audit event; Conflict
        when ``failed`` is no longer the run's latest attempt."""
        return self.store.add_attempt(
            run.id,
            tag=tag,
            origin="retry",
            after=failed.number,
            excluded_nodes=exclude or None,
            audit=AuditEntry(
                actor="gateway",
                action="run.retry",
                target_type="run",
                target_id=run.id,
                project=run.project,
                source="retry policy",
                before={"attempt": failed.number, "failure": (failed.failure or {}).get("class")},
                after={"attempt": failed.number + 1, "exclude_nodes": exclude},
            ),
        )


def _ended(run: Run, attempt: Attempt, *, steps: list[StepRecord], stderr_tail: str) -> EndedAttempt:
    """What ``classify`` needs to know of ``attempt``, from its record and ``run``'s spec (who
    cancelled it is the caller's to add)."""
    resources = run.spec.resources
    return EndedAttempt(
        state=attempt.state,
        slurm_state=attempt.slurm_state,
        exit_code=attempt.exit_code,
        exit_signal=attempt.exit_signal,
        steps=steps,
        stderr_tail=stderr_tail,
        max_rss_kb=attempt.max_rss_kb,
        requested_mem_mb=resources.mem_mb or None,  # 0 (a whole node) and unset: no size to compare
        walltime_min=resources.walltime_min,
        node_list=attempt.node_list,
        reason=attempt.reason,
        dataset_paths=run.spec.dataset_paths(),
    )
