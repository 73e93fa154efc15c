"""The one way an attempt reaches Slurm, exactly once: first attempts, reruns and retries alike.

DESIGN.md's order, written here and nowhere else:

1. ``Submission.prepare``: the backend gets ready (``SlurmBackend.prepare_submit``; the CLI
   backend starts ``sbatch``, which waits for its script), so what that costs overlaps the
   caller's recording. Nothing can be queued yet.
2. The caller commits the attempt, SUBMITTING with its unique tag (``RunStore.create_run`` for a
   run's first attempt, ``add_attempt`` for a retry), inside ``abandoned_on_error``: if that
   fails, the prepared submission is given up and Slurm never hears of it.
3. ``Submission.send`` hands the committed attempt's script to Slurm (the tag in ``--comment``)
   and records what came of it: the job id (QUEUED), Slurm's refusal (NEVER_SUBMITTED, and
   SubmitRejected raised), or no answer (a note; the attempt stays SUBMITTING and
   ``Refresher.reconcile`` settles it by its tag).

A crash between 2 and 3 leaves a SUBMITTING attempt that no Slurm job or exactly one carries the
tag of; reconciliation adopts that job or marks the attempt never submitted, and never submits
again. ``send`` is the only writer of job ids besides the refresh (reconcile, Slurm's requeues) and
``record_sent`` here, which records a batch's job ids (each got by ``transmit``, ``send`` without
the recording) in one transaction (``gateway.services.runs.batch_send``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from gateway.adapters.runhost import RunHost
from gateway.adapters.slurm.protocol import PreparedSubmit, SlurmBackend
from gateway.core.runs.values import Attempt, Run, StateEvent
from gateway.errors import SlurmUnavailable, SubmitRejected
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sent:
    """What ``Submission.send`` recorded: the job id and its SUBMITTING -> QUEUED event, or neither
    when Slurm did not answer (the attempt stays SUBMITTING until reconciled)."""

    job_id: str | None
    event: StateEvent | None


class Submission:
    """One attempt's submission: prepared before the attempt is committed, sent once after."""

    def __init__(self, store: RunStore, prepared: PreparedSubmit, tag: str) -> None:
        self.store = store
        self.prepared = prepared
        self.tag = tag
        self._done = False

    @classmethod
    def prepare(
        cls,
        slurm: SlurmBackend,
        store: RunStore,
        *,
        tag: str,
        as_user: str | None,
        exclude_nodes: Sequence[str] = (),
        comment: str | None = None,
        mail_user: str | None = None,
        script_path: str | None = None,
    ) -> Submission:
        """Make the submission of the attempt tagged ``tag`` ready (``SlurmBackend.prepare_submit``),
        as OS user ``as_user``, kept off ``exclude_nodes``, with the user's ``comment`` after the tag,
        from the file ``script_path`` (the caller writes the script there before ``send``:
        ``write_script_file``).

        Raises SpecError for a malformed tag, node name, comment or path (nothing was started).
        """
        prepared = slurm.prepare_submit(
            tag=tag,
            as_user=as_user,
            exclude_nodes=exclude_nodes,
            comment=comment,
            mail_user=mail_user,
            script_path=script_path,
        )
        return cls(store, prepared, tag)

    @contextmanager
    def abandoned_on_error(self) -> Iterator[None]:
        """The caller's work before ``send`` (recording the attempt, its run directory): any exception
        gives the submission up, so nothing is queued, and goes on."""
        try:
            yield
        except BaseException:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Give the submission up: nothing is, or will be, queued (a no-op once sent or abandoned)."""
        if not self._done:
            self._done = True
            self.prepared.abandon()

    def give_up(self, attempt: Attempt, reason: str, *, source: str) -> None:
        """Abandon the submission of the committed ``attempt`` before its script was sent, and record
        it NEVER_SUBMITTED with ``reason`` (an event from ``source``)."""
        self.abandon()
        self.store.mark_never_submitted(attempt.id, reason, source=source)

    def send(self, attempt: Attempt, script: str, *, source: str) -> Sent:
        """Send ``script`` as the committed, SUBMITTING ``attempt`` (exactly once) and record the outcome.

        The job id is stored (the attempt becomes QUEUED; the event's source is ``source``) and
        returned. Raises SubmitRejected, after recording the attempt NEVER_SUBMITTED with Slurm's
        message, when Slurm refused the job or sbatch could not start (nothing was queued). When
        Slurm does not answer, the job may or may not exist: a note is added, the attempt stays
        SUBMITTING for reconciliation, and ``Sent(None, None)`` is returned. Any other error (no job
        id in Slurm's answer: SlurmOutputError) leaves the attempt SUBMITTING and goes on.
        """
        job_id = self.transmit(attempt, script)
        if job_id is None:
            return Sent(None, None)
        return Sent(job_id, self.store.record_job_id(attempt.id, job_id, source=source))

    def transmit(self, attempt: Attempt, script: str) -> str | None:
        """``send`` but for recording the job id: Slurm's job id, which the caller records with
        ``record_sent`` (a batch records all its runs' in one transaction); None when Slurm did not
        answer (the note is added). Refusals are recorded here, as ``send`` records them."""
        if self._done:
            raise RuntimeError(f"the submission of {self.tag} was already sent or abandoned")
        if attempt.tag != self.tag:
            raise ValueError(f"attempt {attempt.tag} is not the one {self.tag} was prepared for")
        self._done = True
        try:
            return self.prepared.send(script)
        except SubmitRejected as exc:
            self.store.mark_never_submitted(attempt.id, str(exc), source="sbatch")
            raise
        except SlurmUnavailable as exc:
            log.warning("sbatch did not answer for %s (%s); reconcile looks it up", attempt.tag, exc)
            self.store.add_note(attempt.id, f"sbatch did not answer: {exc}", source="sbatch")
            return None


SCRIPT_FILE = "job.sbatch"  # the rendered script in the run directory, which sbatch is given by path


def script_file(run_dir: str) -> str:
    """Where a run's rendered script is written for sbatch to read: ``RUN_DIR/job.sbatch``, the path
    Slurm records as each job's Command (a job that resubmits itself finds it there)."""
    return f"{run_dir}/{SCRIPT_FILE}"


def write_script_file(host: RunHost, run: Run) -> None:
    """Write ``run``'s rendered script to ``script_file`` as the job's OS user, read-only (the
    recorded script is the evidence; this is the copy sbatch and the job read). RunHostError
    when that user cannot write it."""
    assert run.os_user is not None
    host.write_file(script_file(run.run_dir), run.script.encode(), as_user=run.os_user, mode=0o444)


def record_sent(store: RunStore, sent: Sequence[tuple[Attempt, str]], *, source: str) -> dict[int, Sent]:
    """Record the job ids that ``Submission.transmit`` got for these SUBMITTING attempts, all in one
    transaction (``RunStore.record_job_ids``); what was recorded, by attempt id. An attempt that a
    reconciliation settled in the meantime is left out (its job is already recorded, by its tag)."""
    events = store.record_job_ids([(a.id, job_id) for a, job_id in sent], source=source)
    jobs = {a.id: job_id for a, job_id in sent}
    return {attempt_id: Sent(jobs[attempt_id], event) for attempt_id, event in events.items()}
