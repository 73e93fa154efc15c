"""After a failure: why it failed (the failure class, with evidence), and the retry policy.

When an attempt ends without succeeding, ``diagnose`` reads the job's step
records and the tail of its stderr from the run directory, classifies the
failure (``gateway.core.failures``) and records it; the retry policy of the
run's queue (``gateway.core.retry``) then says whether and when a new attempt
follows. ``process_due`` submits the retries that are due, each exactly once
(attempt row first, tag in ``--comment``, job id after; reconciliation
settles a crash in between, as for a first submission).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core.explain_text import expand_hostlist
from gateway.core.failures import classify
from gateway.core.preflight import parse_steps
from gateway.core.retry import RetryPolicy, decide
from gateway.core.states import RunState
from gateway.domain import Attempt, Run
from gateway.errors import Conflict, GatewayError, NotFound, SlurmUnavailable, SubmitRejected
from gateway.services.logs import log_path
from gateway.store.access import AccessStore
from gateway.store.audit import AuditEntry
from gateway.store.repo import RunStore

log = logging.getLogger(__name__)
TAIL_BYTES = 8 * 1024


class RetryService:
    def __init__(self, store: RunStore, access: AccessStore, slurm: SlurmBackend) -> None:
        self.store = store
        self.access = access
        self.slurm = slurm

    # -- why it failed ------------------------------------------------------------

    def diagnose(self, run: Run, attempt: Attempt, *, now: datetime | None = None) -> dict | None:
        """Classify a failed attempt, record the failure and schedule a retry per policy."""
        now = now or datetime.now(UTC)
        if attempt.state is RunState.SUCCEEDED or attempt.failure is not None:
            return attempt.failure
        task = _first_task(run, attempt)
        # An array task writes its steps under its own job id (sacct's JobIDRaw).
        step_job = (attempt.tasks.get(task) or {}).get("job_id") if task is not None else attempt.job_id
        steps_text = _read(Path(run.run_dir) / f"steps-{step_job or attempt.job_id}.jsonl", whole=True)
        stderr_tail = _read(Path(log_path(run, attempt, "stderr", task)), whole=False)
        resources = run.spec.get("resources", {})
        info = classify(
            state=attempt.state,
            slurm_state=attempt.slurm_state,
            exit_code=attempt.exit_code,
            exit_signal=attempt.exit_signal,
            steps=parse_steps(steps_text),
            stderr_tail=stderr_tail,
            max_rss_kb=attempt.max_rss_kb,
            requested_mem_mb=_mem_mb(resources),
            walltime_min=resources.get("walltime_min"),
            node_list=attempt.node_list,
            cancelled_by=str(attempt.cancelled_by_uid) if attempt.cancelled_by_uid is not None else None,
            reason=attempt.reason,
            dataset_paths=[
                d for d in run.spec.get("datasets", []) if isinstance(d, str) and d.startswith("/")
            ],
        )
        if info is None:
            return None
        decision = decide(
            failure_class=info.klass,
            attempt_number=attempt.number,
            policy=self._policy(run),
            resumable=bool(run.spec.get("resumable", False)),
            failed_nodes=list(expand_hostlist(attempt.node_list or "")),
        )
        failure = {
            "class": info.klass,
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
        info = classify(
            state=attempt.state,
            slurm_state=attempt.slurm_state,
            exit_code=attempt.exit_code,
            exit_signal=attempt.exit_signal,
            steps=[],
            stderr_tail="",
            max_rss_kb=attempt.max_rss_kb,
            requested_mem_mb=_mem_mb(run.spec.get("resources", {})),
            walltime_min=run.spec.get("resources", {}).get("walltime_min"),
            node_list=attempt.node_list,
            cancelled_by=None,
            reason=attempt.reason,
        )
        failure = {
            "class": info.klass
            if info
            else "node_failure"
            if attempt.state is RunState.NODE_FAILED
            else "preempted",
            "summary": (info.summary if info else "Slurm requeued the job"),
            "action": "none: Slurm requeued the job and it runs again as the next attempt",
            "evidence": info.evidence if info else {"node_list": attempt.node_list},
            "retry": {
                "retry": False,
                "why": "Slurm requeued the job itself (same job id)",
                "exclude_nodes": [],
            },
        }
        self.store.set_failure(attempt.id, failure)

    def _policy(self, run: Run) -> RetryPolicy:
        """The queue's retry policy, with the run's own ``retry`` settings over it."""
        try:
            queue = self.access.project(run.project).queue(run.queue)
        except NotFound:
            queue = None
        merged = dict(queue.retry or {}) if queue else {}
        merged.update({k: v for k, v in (run.spec.get("retry") or {}).items() if v is not None})
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
        from gateway.services.runs import attempt_tag

        run = self.store.get_run(failed.run_id)
        exclude = list((failed.failure or {}).get("retry", {}).get("exclude_nodes") or [])
        user = self.access.user(run.submitter)
        tag = attempt_tag(run.id, failed.number + 1)
        attempt = self.store.add_attempt(
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
        if not user.os_user:
            self.store.mark_never_submitted(
                attempt.id, "the submitter has no OS user any more", source="retry"
            )
            return None
        try:
            job_id = self.slurm.submit(run.script, tag=tag, as_user=user.os_user, exclude_nodes=exclude)
        except SubmitRejected as exc:
            self.store.mark_never_submitted(attempt.id, str(exc), source="sbatch")
            return None
        except SlurmUnavailable as exc:
            self.store.add_note(attempt.id, f"sbatch did not answer: {exc}", source="sbatch")
            return tag
        self.store.record_job_id(attempt.id, job_id, source="retry")
        return tag


def _read(path: Path, *, whole: bool) -> str:
    """A job file's text (or its last ``TAIL_BYTES``); empty when it is not there or not readable."""
    try:
        with path.open("rb") as handle:
            if not whole:
                size = path.stat().st_size
                handle.seek(max(size - TAIL_BYTES, 0))
            return handle.read(1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _first_task(run: Run, attempt: Attempt) -> str | None:
    if attempt.array_size is None:
        return None
    failed = [k for k, t in sorted(attempt.tasks.items()) if t.get("state") not in ("succeeded", None)]
    return failed[0] if failed else None


def _mem_mb(resources: dict) -> int | None:
    mem_gb = resources.get("mem_gb")
    return int(mem_gb * 1024) if isinstance(mem_gb, int | float) else None
