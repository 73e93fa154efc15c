"""Submitting, cancelling and reading runs; every interface calls these.

Submission is exactly-once (DESIGN.md), through ``Submission``
(``gateway.services.runs.submission``), the one path retries take too: sbatch
is prepared once the run is admitted, the run and its attempt with a unique
tag are committed (with the audit event, in one transaction), then the script
is sent with the tag in ``--comment`` and the outcome recorded. A crash
anywhere in between leaves an attempt in SUBMITTING that
``Refresher.reconcile`` resolves by looking the tag up in Slurm, so no run is
submitted twice and none is lost.

A client that retries a submission after a cut connection sends the same
``Idempotency-Key``: the key is committed with the run, so the retry gets
the first run back (the same key with another request: Conflict;
``gateway.services.runs.replay``). Once the run is committed, its run
directory is made and its first attempt sent by ``FirstAttempt``
(``gateway.services.runs.first_attempt``).

Before anything is written, ``Admission`` checks the caller, the queue, the
caps, the OS user and the output paths (``gateway.services.runs.admission``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import jinja2

from gateway.adapters.prometheus import GatewayMetrics
from gateway.adapters.runhost import RunHost
from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.core.access.policy import allowed, require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.envs.record import EnvLaunch
from gateway.core.explain.pending import Explanation
from gateway.core.runs.failures import CANCEL_NOTE
from gateway.core.runs.values import NewRun, Page, Run, RunFilter
from gateway.core.sbatch.render import RenderedScript, render_sbatch
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.core.slurm.tags import attempt_tag
from gateway.core.spec.diff import diff, parse_assignment, set_path
from gateway.core.spec.run_spec import RunSpec, build_spec
from gateway.errors import Conflict, GatewayError, NotFound
from gateway.services.accounting.telemetry import telemetry_launch
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.lineage.datasets import DatasetService
from gateway.services.ops.prometheus import refusal_reason
from gateway.services.runs.admission import Admission, Admitted
from gateway.services.runs.batch import submit_batch
from gateway.services.runs.batch_items import BatchItem, BatchOutcome
from gateway.services.runs.check import RunCheck, RunChecker
from gateway.services.runs.first_attempt import FirstAttempt
from gateway.services.runs.inputs import ResolvedInput, environment_of, resolve_environment, resolve_inputs
from gateway.services.runs.new_runs import new_run_id
from gateway.services.runs.new_runs import submit_audit as _submit_audit
from gateway.services.runs.replay import Submitted, claim_key, replay
from gateway.services.runs.rerun import RerunIdentity, rerun_identity
from gateway.services.runs.submission import Submission
from gateway.services.runs.waiting import WaitingService
from gateway.settings import Settings
from gateway.store.runs.runs import RunStore


@dataclass(frozen=True)
class RunView:
    """A run as ``gw show`` and ``GET /runs/{id}`` show it: with why it waits and its reruns."""

    run: Run
    waiting: Explanation | None
    children: list[str]


class RunService:
    def __init__(
        self,
        store: RunStore,
        admission: Admission,
        clusters: SlurmClusters,
        host: RunHost,
        templates: jinja2.Environment,
        settings: Settings,
        datasets: DatasetService,
        waiting: WaitingService,
        metrics: GatewayMetrics | None = None,
        environments: EnvCatalog | None = None,
    ) -> None:
        self.environments = environments  # registered environments a spec may name
        self.metrics = metrics or GatewayMetrics()  # submissions and refusals (GET /metrics)
        self.store = store
        self.admission = admission
        self.clusters = clusters  # each run goes to its queue's cluster (docs/clusters.md)
        self.host = host
        self.templates = templates
        self.settings = settings
        self.datasets = datasets
        self.waiting = waiting
        self.first = FirstAttempt(store, host, settings, datasets, admission.held)  # its directory, its send
        # project -> the space limit's warning, or None (StorageService.warning; set by the wiring)
        self.space_warning: Callable[[str], str | None] | None = None

    # -- submitting ---------------------------------------------------------------

    def submit(
        self, spec: RunSpec, *, principal: Principal, derived_from: tuple[str, list[dict]] | None = None
    ) -> Run:
        """``submit_keyed`` without an idempotency key: the run, with its first attempt."""
        return self.submit_keyed(spec, principal=principal, derived_from=derived_from).run

    def submit_keyed(
        self,
        spec: RunSpec,
        *,
        principal: Principal,
        derived_from: tuple[str, list[dict]] | None = None,
        idempotency_key: str | None = None,
        identity: RerunIdentity | None = None,
    ) -> Submitted:
        """Check, record, render and submit a run; returns it with its first attempt.

        ``identity`` (a rerun, ``rerun_identity``): whose run it is; admission, the inputs, the OS
        user and ``submitter`` are that principal's, the audit event and idempotency key the caller's.

        Raises SpecError (bad queue, GPU type, walltime, output path), QuotaExceeded (can never
        fit), Forbidden (role, no OS user), Conflict (the idempotency key was used for another
        request), SubmitRejected when Slurm refuses (the run stays on record as never submitted).
        When Slurm does not answer, the run is returned still SUBMITTING; reconciliation settles it.
        Each new run counts as a submission, each refusal by its error class (``GatewayMetrics``).
        """
        # One read of the access generation for the whole submission (admission, the cluster's
        # backend, the send, the space warning), not one per cached read: the site as of one moment.
        with self.admission.access.snapshot():
            try:
                submitted = self._submit_keyed(spec, principal, derived_from, idempotency_key, identity)
            except GatewayError as exc:
                self.metrics.refused(refusal_reason(exc))
                raise
            if not submitted.replayed:
                self.metrics.submitted(submitted.run.project, submitted.run.queue)
            warning = self.space_warning(submitted.run.project) if self.space_warning else None
        return replace(submitted, warnings=(warning,)) if warning else submitted

    def submit_batch(
        self,
        items: Sequence[BatchItem],
        *,
        principal: Principal,
        partial: bool = False,
        idempotency_key: str | None = None,
    ) -> BatchOutcome:
        """Submit many runs in one pass: one admission pass with the batch's caps counted together,
        one transaction to record them, each sent exactly once (``gateway.services.runs.batch``).

        All or none unless ``partial``: BatchRejected (nothing written) names every refused item.
        ``idempotency_key`` covers the batch (``<key>#<index>`` per item without a key of its own).
        """
        return submit_batch(
            self, items, principal=principal, partial=partial, idempotency_key=idempotency_key
        )

    def _submit_keyed(
        self,
        spec: RunSpec,
        principal: Principal,
        derived_from: tuple[str, list[dict]] | None,
        idempotency_key: str | None,
        identity: RerunIdentity | None = None,
    ) -> Submitted:
        operation = f"run.rerun of {derived_from[0]}" if derived_from else "run.submit"
        owner = identity.runs_as if identity is not None else principal
        if identity is not None and (identity.as_me or identity.requested_by):
            operation += " as me" if identity.as_me else f" as {owner.user}"
        claim = claim_key(principal, idempotency_key, operation, spec, ttl_s=self.settings.idempotency_ttl_s)
        if claim is not None:
            earlier = self.store.claimed_key(claim.user, claim.key)
            if earlier is not None:
                return replay(self.store, claim, earlier)
        admitted = self.admission.admit(spec, owner)
        run_id = new_run_id()
        run_dir = str(self.settings.runs_dir / run_id)
        # sbatch starts now and waits for the script: its start-up overlaps the recording below, and
        # it can queue nothing before the attempt is committed (``FirstAttempt.send`` hands it the script).
        submission = Submission.prepare(
            self.clusters.get(admitted.cluster),
            self.store,
            tag=attempt_tag(run_id, 1),
            as_user=admitted.os_user,
            comment=spec.comment,
            mail_user=spec.mail_user,
            script_path=self.first.script_path(run_dir),  # Slurm records it as the job's Command
        )
        with submission.abandoned_on_error():
            inputs = resolve_inputs(spec, run_dir, principal=owner, datasets=self.datasets)
            launch = resolve_environment(spec, principal=owner, catalog=self.environments)
            new = self._new_run(spec, run_id, run_dir, owner, admitted, inputs, derived_from, launch)
            if identity is not None and identity.requested_by is not None:
                new = replace(new, requested_by=identity.requested_by)
            audit = _submit_audit(new, principal, admitted, inputs, derived_from, identity)
            run = self.store.create_run(new, audit=audit, claim=claim)
        if run is None:  # a concurrent request with the same key won the race
            submission.abandon()
            assert claim is not None
            earlier = self.store.claimed_key(claim.user, claim.key)
            assert earlier is not None
            return replay(self.store, claim, earlier)
        return Submitted(self.first.send(run, inputs, submission))

    def check(self, spec: RunSpec, *, principal: Principal, slurm_test: bool = False) -> RunCheck:
        """What submitting ``spec`` would do, recording and queueing nothing (``RunChecker.check``)."""
        return self._checker().check(spec, principal=principal, slurm_test=slurm_test)

    def preview(self, spec: RunSpec, *, principal: Principal, run_id: str) -> RenderedScript:
        """The script ``spec`` would be submitted as, rendered with the placeholder ``run_id`` after
        every admission check a submission makes (``RunChecker.render``); nothing is recorded."""
        return self._checker().render(spec, principal=principal, run_id=run_id)[1]

    def _checker(self) -> RunChecker:
        return RunChecker(
            self.admission, self.clusters, self.templates, self.settings, self.datasets, self.environments
        )

    def _new_run(
        self,
        spec: RunSpec,
        run_id: str,
        run_dir: str,
        principal: Principal,
        admitted: Admitted,
        inputs: list[ResolvedInput],
        derived_from: tuple[str, list[dict]] | None,
        launch: EnvLaunch | None = None,
    ) -> NewRun:
        rendered = render_sbatch(
            spec,
            self.templates,
            run_id=run_id,
            run_dir=run_dir,
            target=admitted.target,
            inputs=[i.check for i in inputs],
            telemetry=telemetry_launch(self.settings),
            environment=launch,
        )
        return NewRun(
            id=run_id,
            spec=spec,
            submitter=principal.user,
            os_user=admitted.os_user,
            script=rendered.text,
            script_sha256=rendered.sha256,
            template_name=rendered.template_name,
            template_version=rendered.template_version,
            run_dir=run_dir,
            first_tag=attempt_tag(run_id, 1),
            array_size=len(spec.sweep.expand()) if spec.sweep else None,
            parent_run_id=derived_from[0] if derived_from else None,
            derived_diff=derived_from[1] if derived_from else None,
            code=spec.code.model_dump(mode="json") if spec.code else None,
            environment=environment_of(spec, self.host, os_user=admitted.os_user, launch=launch),
            inputs=tuple(i.record() for i in inputs),
            cluster=admitted.cluster,
        )

    def rerun(
        self,
        run_id: str,
        *,
        principal: Principal,
        changes: Sequence[str] = (),
        spec: RunSpec | None = None,
        as_me: bool = False,
    ) -> Run:
        """``rerun_keyed`` without an idempotency key: the new run."""
        return self.rerun_keyed(run_id, principal=principal, changes=changes, spec=spec, as_me=as_me).run

    def rerun_keyed(
        self,
        run_id: str,
        *,
        principal: Principal,
        changes: Sequence[str] = (),
        spec: RunSpec | None = None,
        idempotency_key: str | None = None,
        as_me: bool = False,
    ) -> Submitted:
        """A new run derived from ``run_id``: its spec with ``changes`` (``key.path=value``), or ``spec``.

        The new run records its parent and the changes as a diff against the
        parent's spec; the parent keeps all its evidence untouched. A rerun of
        someone else's run runs as its owner (``requested_by`` names the caller),
        or, with ``as_me``, under the caller's own identity, audited with the
        command it runs (``gateway.services.runs.rerun``); Forbidden otherwise.
        """
        parent = self.get(run_id, principal=principal)
        base = parent.spec.model_dump(mode="json")
        if spec is not None:
            data = spec.model_dump(mode="json")
        else:
            data = base
            for change in changes:
                path, value = parse_assignment(change)
                data = set_path(data, path, value)
        new_spec = build_spec(data, source=f"rerun of {run_id}")
        changed = diff(base, new_spec.model_dump(mode="json"))
        identity = rerun_identity(
            parent, new_spec, changed, principal=principal, access=self.admission.access, as_me=as_me
        )
        return self.submit_keyed(
            new_spec,
            principal=principal,
            derived_from=(parent.id, changed),
            idempotency_key=idempotency_key,
            identity=identity,
        )

    # -- cancelling ---------------------------------------------------------------

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
        self.clusters.get(self.clusters.name_of(attempt.cluster)).cancel(attempt.job_id)
        self.store.add_note(
            attempt.id,
            f"{CANCEL_NOTE}{principal.user}",
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

    # -- reading --------------------------------------------------------------------

    def get(self, run_id: str, *, principal: Principal) -> Run:
        """The run, if ``principal`` may read its project (else NotFound, as if it did not exist)."""
        run = self.store.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        return run

    def show(self, run_id: str, *, principal: Principal) -> RunView:
        """The run with why it waits (from what the refresh cycle and the cluster cache know, no
        Slurm call of its own) and the runs derived from it."""
        run = self.get(run_id, principal=principal)
        return RunView(run, self.waiting.explain(run), self.store.children(run_id))

    def list(self, *, principal: Principal, where: RunFilter | None = None) -> Page:
        """Runs of the projects ``principal`` may read, newest first, as ``where`` says; NotFound naming
        the clusters when ``where.cluster`` is none of them."""
        if where is not None and where.cluster is not None:
            first = self.clusters.check(where.cluster) == self.clusters.first()
            where = replace(where, cluster_first=first)
        return self.store.list_runs(where, projects=visible_projects(principal))
