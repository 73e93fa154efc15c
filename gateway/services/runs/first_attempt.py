"""Sending a recorded run's first attempt: its run directory made, its script sent, the answer kept.

The run and its first attempt (SUBMITTING, with its unique tag) are committed before anything here
runs (docs/service.md, steps 4 to 6): ``prepare_dir`` makes the run directory as the job's OS user
with the script file, the inputs' manifests and the held secrets; ``send`` then hands the script to
``Submission.send``, exactly once. A single run (``RunService.submit_keyed``) and each run of a batch
(``gateway.services.runs.batch``) go through these steps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.adapters.runhost import RunHost
from gateway.core.runs.values import Run
from gateway.errors import RunHostError, SpecError, SubmitRejected
from gateway.services.lineage.datasets import DatasetService
from gateway.services.runs.held_secrets import HeldSecrets
from gateway.services.runs.inputs import ResolvedInput, write_manifests
from gateway.services.runs.submission import Sent, Submission, script_file, write_script_file
from gateway.settings import Settings
from gateway.store.runs.runs import RunStore


@dataclass(frozen=True)
class FirstAttempt:
    """What sending a first attempt touches: the runs, the run host, the site's settings, the datasets
    (their manifests) and the held secrets (delivered into the run directory)."""

    store: RunStore
    host: RunHost
    settings: Settings
    datasets: DatasetService
    held: HeldSecrets

    def script_path(self, run_dir: str) -> str | None:
        """The file sbatch is given (``script_file``), or None: the script on its stdin."""
        return script_file(run_dir) if self.settings.slurm_submit_by_path else None

    def send(self, run: Run, inputs: list[ResolvedInput], submission: Submission) -> Run:
        """Prepare the run directory, then send the recorded first attempt (``Submission.send``: exactly
        once, it was committed first); the run as it stands then."""
        self.prepare_dir(run, inputs, submission)
        try:
            sent = submission.send(run.attempts[0], run.script, source="gateway")
        except SubmitRejected as exc:
            exc.run_id = run.id  # type: ignore[attr-defined]  # the interfaces read it (getattr) to name the run
            raise
        if sent.event is None:  # Slurm did not answer: still SUBMITTING, with the note
            return self.store.get_run(run.id)
        return queued(run, sent)

    def prepare_dir(self, run: Run, inputs: list[ResolvedInput], submission: Submission) -> None:
        """The run directory (and its inputs' manifests), as the job's OS user; a failure gives the
        submission up and records the run never submitted (RunHostError, naming the run)."""
        assert run.os_user is not None
        with submission.abandoned_on_error():
            try:
                self.host.make_run_dir(run.run_dir, owner=run.os_user)
                if self.settings.slurm_submit_by_path:
                    write_script_file(self.host, run)  # what sbatch reads, by path
                if inputs:
                    write_manifests(inputs, self.datasets, self.host, os_user=run.os_user)
                # site and project secrets: their values, written for the job's user (never stored)
                self.held.deliver(run.spec, run.run_dir, os_user=run.os_user)
            except RunHostError as exc:
                submission.give_up(
                    run.attempts[0], f"cannot prepare the run directory: {exc}", source="gateway"
                )
                exc.run_id = run.id  # type: ignore[attr-defined]  # the interfaces read it (getattr) to name the run
                raise
            except SpecError as exc:  # a held secret vanished since admission: nothing is queued
                submission.give_up(
                    run.attempts[0], f"cannot deliver the run's secrets: {exc}", source="gateway"
                )
                exc.run_id = run.id  # type: ignore[attr-defined]  # the interfaces read it (getattr) to name the run
                raise


def queued(run: Run, sent: Sent) -> Run:
    """``run`` (as recorded, SUBMITTING) with the job id and QUEUED event ``send`` recorded."""
    attempt = run.attempts[0]
    assert sent.event is not None
    first = replace(
        attempt,
        job_id=sent.job_id,
        state=sent.event.to_state,
        slurm_state="PENDING",
        events=[*attempt.events, sent.event],
    )
    return replace(run, state=sent.event.to_state, attempts=[first])
