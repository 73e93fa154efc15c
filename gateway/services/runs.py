"""Submitting, cancelling and reading runs; every interface calls these.

Submission is exactly-once (DESIGN.md): the attempt row with a unique tag is
committed before ``sbatch`` runs, the tag travels in ``--comment``, and the
job id is stored afterwards. A crash anywhere in between leaves an attempt in
SUBMITTING that ``Refresher.reconcile`` resolves by looking the tag up in
Slurm, so no run is submitted twice and none is lost.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from pathlib import Path

import jinja2

from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core import names
from gateway.core.render import SubmitTarget, render_sbatch
from gateway.core.spec import RunSpec
from gateway.core.states import TERMINAL, RunState
from gateway.domain import Page, Run
from gateway.errors import Conflict, GatewayError, SlurmUnavailable, SpecError, SpecIssue, SubmitRejected
from gateway.settings import Settings
from gateway.store.repo import RunStore

log = logging.getLogger(__name__)


def new_run_id() -> str:
    return "r-" + uuid.uuid4().hex[:16]


def attempt_tag(run_id: str, number: int) -> str:
    """The tag an attempt carries in Slurm's ``--comment``: unique and readable."""
    return f"gw-{run_id}-{number}"


class RunService:
    def __init__(
        self, store: RunStore, slurm: SlurmBackend, templates: jinja2.Environment, settings: Settings
    ) -> None:
        self.store = store
        self.slurm = slurm
        self.templates = templates
        self.settings = settings

    def submit(self, spec: RunSpec, *, submitter: str) -> Run:
        """Record, render and submit a run; returns it with its first attempt.

        Raises SpecError for a spec that cannot be rendered, SubmitRejected
        when Slurm refuses the job (the run stays on record as never
        submitted). When Slurm does not answer, the run is returned still
        SUBMITTING; reconciliation settles it.
        """
        if not names.TAG.fullmatch(submitter):
            raise SpecError(
                [SpecIssue("submitter", f"not a valid user name; use {names.TAG_HELP}", submitter)]
            )
        run_id = new_run_id()
        run_dir = str(self.settings.runs_dir / run_id)
        rendered = render_sbatch(
            spec,
            self.templates,
            run_id=run_id,
            run_dir=run_dir,
            target=SubmitTarget(partition=spec.queue),
        )
        run = self.store.create_run(
            run_id=run_id,
            name=spec.name,
            project=spec.project,
            queue=spec.queue,
            submitter=submitter,
            tags=spec.tags,
            spec=spec.model_dump(mode="json"),
            spec_sha256=spec.spec_hash(),
            script=rendered.text,
            script_sha256=rendered.sha256,
            template_name=rendered.template_name,
            template_version=rendered.template_version,
            run_dir=run_dir,
            attempt_tag=attempt_tag(run_id, 1),
            array_size=len(spec.sweep.expand()) if spec.sweep else None,
        )
        attempt = run.attempts[0]
        try:
            Path(run_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.store.mark_never_submitted(
                attempt.id, f"cannot create run directory: {exc}", source="gateway"
            )
            raise GatewayError(f"cannot create the run directory {run_dir}: {exc.strerror}") from exc
        try:
            job_id = self.slurm.submit(rendered.text, tag=attempt.tag)
        except SubmitRejected as exc:
            self.store.mark_never_submitted(attempt.id, str(exc), source="sbatch")
            exc.run_id = run_id  # type: ignore[attr-defined]
            raise
        except SlurmUnavailable as exc:
            # sbatch may or may not have queued the job: leave SUBMITTING for reconcile.
            log.warning(
                "sbatch did not answer for %s (%s); reconciliation will look up %s", run_id, exc, attempt.tag
            )
            self.store.add_note(attempt.id, f"sbatch did not answer: {exc}", source="sbatch")
            return self.store.get_run(run_id)
        event = self.store.record_job_id(attempt.id, job_id)
        queued = replace(
            attempt,
            job_id=job_id,
            state=event.to_state,
            slurm_state="PENDING",
            events=[*attempt.events, event],
        )
        return replace(run, state=event.to_state, attempts=[queued])

    def cancel(self, run_id: str, *, by: str) -> Run:
        """Ask Slurm to cancel the run's live attempt; an ended run is returned as it is."""
        run = self.store.get_run(run_id)
        attempt = run.latest
        if attempt is None or attempt.state in TERMINAL:
            return run
        if attempt.state is RunState.SUBMITTING or attempt.job_id is None:
            raise Conflict(
                f"run {run_id} is still being submitted (attempt {attempt.number}); "
                "cancel it once it has a job id"
            )
        self.slurm.cancel(attempt.job_id)
        self.store.add_note(attempt.id, f"cancel requested by {by}", source="gateway")
        return self.store.get_run(run_id)

    def get(self, run_id: str) -> Run:
        return self.store.get_run(run_id)

    def list(
        self,
        *,
        project: str | None = None,
        state: RunState | None = None,
        submitter: str | None = None,
        tag: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page:
        return self.store.list_runs(
            project=project, state=state, submitter=submitter, tag=tag, cursor=cursor, limit=limit
        )
