"""Submitting, cancelling and reading runs; every interface calls these.

Submission is exactly-once (DESIGN.md): the attempt row with a unique tag is
committed before ``sbatch`` runs (with the audit event, in one transaction),
the tag travels in ``--comment``, and the job id is stored afterwards. A
crash anywhere in between leaves an attempt in SUBMITTING that
``Refresher.reconcile`` resolves by looking the tag up in Slurm, so no run is
submitted twice and none is lost.

Before anything is written, the caller must be a member of the project, the
spec's queue must be one of the project's (it fills partition, account and
QoS), the run must be able to fit the caps one day, and the caller must map
to an OS user the job runs as.
"""

from __future__ import annotations

import logging
import os
import pwd
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import jinja2

from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core.quota import Ask, never_fits
from gateway.core.render import SubmitTarget, render_sbatch
from gateway.core.spec import RunSpec, build_spec
from gateway.core.specdiff import diff, parse_assignment, set_path
from gateway.core.states import TERMINAL, RunState
from gateway.domain import Page, Principal, Project, Run
from gateway.errors import (
    Conflict,
    Forbidden,
    GatewayError,
    NotFound,
    QuotaExceeded,
    SlurmUnavailable,
    SpecError,
    SpecIssue,
    SubmitRejected,
)
from gateway.services.datasets import DatasetService
from gateway.services.inputs import environment_of, resolve_inputs, write_manifests
from gateway.services.policy import allowed, require, visible_projects
from gateway.services.site import ALLOW_ROOT
from gateway.settings import Settings
from gateway.store.access import AccessStore
from gateway.store.audit import AuditEntry
from gateway.store.repo import RunStore

log = logging.getLogger(__name__)


def new_run_id() -> str:
    return "r-" + uuid.uuid4().hex[:16]


def attempt_tag(run_id: str, number: int) -> str:
    """The tag an attempt carries in Slurm's ``--comment``: unique and readable."""
    return f"gw-{run_id}-{number}"


class RunService:
    def __init__(
        self,
        store: RunStore,
        access: AccessStore,
        slurm: SlurmBackend,
        templates: jinja2.Environment,
        settings: Settings,
        datasets: DatasetService | None = None,
    ) -> None:
        self.store = store
        self.access = access
        self.slurm = slurm
        self.templates = templates
        self.settings = settings
        self.datasets = datasets

    def rerun(
        self,
        run_id: str,
        *,
        principal: Principal,
        changes: Sequence[str] = (),
        spec: RunSpec | None = None,
    ) -> Run:
        """A new run derived from ``run_id``: its spec with ``changes`` (``key.path=value``), or ``spec``.

        The new run records its parent and the changes as a diff against the
        parent's spec; the parent keeps all its evidence untouched.
        """
        parent = self.get(run_id, principal=principal)
        base = dict(parent.spec)
        if spec is not None:
            data = spec.model_dump(mode="json")
        else:
            data = base
            for change in changes:
                path, value = parse_assignment(change)
                data = set_path(data, path, value)
        new_spec = build_spec(data, source=f"rerun of {run_id}")
        changed = diff(base, new_spec.model_dump(mode="json"))
        return self.submit(new_spec, principal=principal, derived_from=(parent.id, changed))

    def submit(
        self, spec: RunSpec, *, principal: Principal, derived_from: tuple[str, list[dict]] | None = None
    ) -> Run:
        """Check, record, render and submit a run; returns it with its first attempt.

        Raises SpecError (bad queue, GPU type, walltime), QuotaExceeded (can
        never fit), Forbidden (role, no OS user), SubmitRejected when Slurm
        refuses (the run stays on record as never submitted). When Slurm does
        not answer, the run is returned still SUBMITTING; reconciliation
        settles it.
        """
        project, target = self._admit(spec, principal)
        os_user = self._os_user(principal)
        run_id = new_run_id()
        run_dir = str(self.settings.runs_dir / run_id)
        inputs = resolve_inputs(spec, run_dir, principal=principal, datasets=self.datasets)
        rendered = render_sbatch(
            spec,
            self.templates,
            run_id=run_id,
            run_dir=run_dir,
            target=target,
            inputs=[i.check for i in inputs],
        )
        run = self.store.create_run(
            run_id=run_id,
            name=spec.name,
            project=spec.project,
            queue=spec.queue,
            submitter=principal.user,
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
            parent_run_id=derived_from[0] if derived_from else None,
            derived_diff=derived_from[1] if derived_from else None,
            code=spec.code.model_dump(mode="json") if spec.code else None,
            environment=environment_of(spec),
            inputs=[i.row() for i in inputs],
            audit=AuditEntry(
                actor=principal.user,
                action="run.rerun" if derived_from else "run.submit",
                target_type="run",
                target_id=run_id,
                project=project.name,
                source=principal.source,
                after={
                    "queue": spec.queue,
                    "partition": target.partition,
                    "account": target.account,
                    "os_user": os_user,
                    "spec_sha256": spec.spec_hash(),
                    "script_sha256": rendered.sha256,
                    **({"datasets": [i.version.ref for i in inputs]} if inputs else {}),
                    **(
                        {"parent_run_id": derived_from[0], "changes": derived_from[1]} if derived_from else {}
                    ),
                },
            ),
        )
        attempt = run.attempts[0]
        try:
            _make_run_dir(run_dir, os_user)
            if inputs:
                write_manifests(inputs, self.datasets)
        except OSError as exc:
            self.store.mark_never_submitted(
                attempt.id, f"cannot prepare the run directory: {exc}", source="gateway"
            )
            raise GatewayError(f"cannot prepare the run directory {run_dir}: {exc.strerror}") from exc
        try:
            job_id = self.slurm.submit(rendered.text, tag=attempt.tag, as_user=os_user)
        except SubmitRejected as exc:
            self.store.mark_never_submitted(attempt.id, str(exc), source="sbatch")
            exc.run_id = run_id  # type: ignore[attr-defined]
            raise
        except SlurmUnavailable as exc:
            # sbatch may or may not have queued the job: leave SUBMITTING for reconcile.
            log.warning("sbatch did not answer for %s (%s); reconcile looks up %s", run_id, exc, attempt.tag)
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

    def _admit(self, spec: RunSpec, principal: Principal) -> tuple[Project, SubmitTarget]:
        """The project and Slurm target of a spec, after every check that needs no Slurm call."""
        if principal.role(spec.project) is None and not principal.is_admin:
            raise NotFound(f"no project {spec.project!r} that {principal.user} is a member of")
        require(principal, "run.submit", spec.project)
        try:
            project = self.access.project(spec.project)
        except NotFound as exc:
            raise NotFound(f"no project {spec.project!r}") from exc
        queue = project.queue(spec.queue)
        if queue is None:
            valid = ", ".join(q.name for q in project.queues) or "none yet (ask an admin)"
            raise SpecError(
                [
                    SpecIssue(
                        "queue", f"project {project.name} has no such queue; its queues: {valid}", spec.queue
                    )
                ]
            )
        issues = []
        res = spec.resources
        if queue.gpu_types and res.gpus_per_node and res.gpu_type not in queue.gpu_types:
            issues.append(
                SpecIssue(
                    "resources.gpu_type",
                    f"queue {queue.name} allows GPU types {', '.join(queue.gpu_types)}; name one of them",
                    res.gpu_type,
                )
            )
        if queue.max_walltime_min is not None and res.walltime_min > queue.max_walltime_min:
            issues.append(
                SpecIssue(
                    "resources.walltime_min",
                    f"queue {queue.name} allows at most {queue.max_walltime_min} minutes",
                    res.walltime_min,
                )
            )
        if issues:
            raise SpecError(issues)
        caps = [(f"project {project.name}", project.quota)]
        member = next((m for m in project.members if m.user == principal.user), None)
        if member is not None:
            caps.append((f"user {principal.user} in project {project.name}", member.quota))
        problems = never_fits(Ask.of(spec), caps)
        if problems:
            raise QuotaExceeded("this run can never start: " + "; ".join(problems))
        return project, SubmitTarget(partition=queue.partition, account=project.slurm_account, qos=queue.qos)

    def _os_user(self, principal: Principal) -> str:
        """The OS user jobs of ``principal`` run as; root only where the site file allows it."""
        user = principal.os_user
        if not user:
            raise Forbidden(f"user {principal.user} has no OS user to run jobs as; ask an admin to map one")
        if user == "root" and not self.access.option(ALLOW_ROOT, False):
            raise Forbidden(
                f"user {principal.user} maps to root, which this site does not allow (allow_root_mapping)"
            )
        try:
            pwd.getpwnam(user)
        except KeyError as exc:
            raise Forbidden(
                f"user {principal.user} maps to OS user {user!r}, which does not exist on this host; "
                "ask an admin to fix the mapping or create the account"
            ) from exc
        return user

    def cancel(self, run_id: str, *, principal: Principal) -> Run:
        """Ask Slurm to cancel the run's live attempt; an ended run is returned as it is."""
        run = self.get(run_id, principal=principal)
        own = run.submitter == principal.user
        require(principal, "run.cancel.own" if own else "run.cancel.any", run.project)
        attempt = run.latest
        if attempt is None or attempt.state in TERMINAL:
            return run
        if attempt.state is RunState.SUBMITTING or attempt.job_id is None:
            raise Conflict(
                f"run {run_id} is still being submitted (attempt {attempt.number}); "
                "cancel it once it has a job id"
            )
        self.slurm.cancel(attempt.job_id)
        self.store.add_note(
            attempt.id,
            f"cancel requested by {principal.user}",
            source="gateway",
            audit=AuditEntry(
                actor=principal.user,
                action="run.cancel",
                target_type="run",
                target_id=run_id,
                project=run.project,
                source=principal.source,
                before={"state": run.state.value, "job_id": attempt.job_id},
            ),
        )
        return self.store.get_run(run_id)

    def get(self, run_id: str, *, principal: Principal) -> Run:
        """The run, if ``principal`` may read its project (else NotFound, as if it did not exist)."""
        run = self.store.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        return run

    def list(
        self,
        *,
        principal: Principal,
        project: str | None = None,
        state: RunState | None = None,
        submitter: str | None = None,
        tag: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page:
        """Runs of the projects ``principal`` may read, newest first."""
        return self.store.list_runs(
            projects=visible_projects(principal),
            project=project,
            state=state,
            submitter=submitter,
            tag=tag,
            cursor=cursor,
            limit=limit,
        )


def _make_run_dir(path: str, os_user: str) -> None:
    """Create the run directory, owned by the OS user the job runs as (it writes its output there)."""
    Path(path).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and os_user != "root":
        entry = pwd.getpwnam(os_user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
