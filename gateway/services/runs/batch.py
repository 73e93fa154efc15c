"""Submitting many runs in one request: one admission pass, one transaction, each run exactly once.

``RunService.submit_batch`` (``POST /runs/batch``, ``gw submit a.yaml b.yaml``, ``gw sbatch`` with
several scripts, ``Gateway.batch()``) takes up to ``batch_max_items`` specs and, in order:

1. reads each item's spec and its idempotency key (the item's own, else ``<batch key>#<index>``)
   and replays the items an earlier request with the same key made already;
2. admits every other item (``Admission.admit``, as one run is admitted), then counts the batch's
   GPU-hours and jobs together against each project's and member's caps: a batch whose runs fit
   one by one but not together is refused as one run that could never fit would be;
3. all-or-none (the default): any refused item refuses the batch (``BatchRejected``, nothing
   written); with ``partial``, the refused items get their error and the others go on. An item
   replayed with its earlier error (its run never submitted) refuses nothing: it is answered as
   the earlier request left it;
4. renders each run and records them all, each with its first attempt SUBMITTING under its unique
   tag, its audit event and its key, in one transaction (``RunStore.create_runs``);
5. sends each recorded attempt through the one submission path, ``batch_submit_parallel`` at
   once (that many ``sbatch`` processes on the CLI backend, that many kept-alive connections to
   slurmrestd on the REST backend): ``Submission.prepare``, the run directory
   (``FirstAttempt.prepare_dir``), ``Submission.transmit``; then records every job id Slurm gave in
   one transaction (``record_sent``).

Exactly-once holds as for one run: every attempt is committed before its script can reach Slurm,
so a crash at any point leaves SUBMITTING attempts that ``Refresher.reconcile`` settles by their
tags, and the same batch sent again with the same Idempotency-Key replays every recorded item.
The one difference from a single run is that ``prepare`` comes after the commit (a thousand
``sbatch`` processes cannot all wait for their scripts at once); it queues nothing either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.adapters.prometheus import GatewayMetrics
from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import ClusterSlurm
from gateway.core.access.quota import Ask
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.envs.record import EnvLaunch
from gateway.core.projects import Quota
from gateway.core.runs.idempotency import IdempotencyClaim
from gateway.core.runs.values import NewRun, Run
from gateway.core.spec.run_spec import RunSpec, build_spec
from gateway.errors import BatchRejected, GatewayError, QuotaExceeded, SpecError, SpecIssue
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.lineage.datasets import DatasetService
from gateway.services.ops.prometheus import refusal_reason
from gateway.services.runs.admission import Admission, Admitted
from gateway.services.runs.first_attempt import FirstAttempt, queued
from gateway.services.runs.inputs import ResolvedInput, resolve_environment, resolve_inputs
from gateway.services.runs.new_runs import new_run_id, submit_audit
from gateway.services.runs.replay import claim_key, replay
from gateway.services.runs.submission import Submission, record_sent
from gateway.settings import Settings
from gateway.store.runs.runs import RunStore


class RunService(Protocol):
    """What a batch uses of ``gateway.services.runs.run_service.RunService``: the single run's own
    steps, so that a batch's run is checked, rendered, recorded and sent as one run is."""

    store: RunStore
    admission: Admission
    clusters: SlurmClusters
    settings: Settings
    datasets: DatasetService
    environments: EnvCatalog | None
    metrics: GatewayMetrics
    first: FirstAttempt

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
    ) -> NewRun: ...


@dataclass(frozen=True)
class BatchItem:
    """One run of a batch as asked: its spec (a ``RunSpec``, or the request's mapping, read here) and
    its own Idempotency-Key (None: the batch key's ``<key>#<index>``, or none without a batch key)."""

    spec: RunSpec | dict[str, Any]
    idempotency_key: str | None = None


@dataclass(frozen=True)
class ItemOutcome:
    """What came of one item: its run (``replayed`` when an earlier request made it), or its error.

    A run refused by Slurm after it was recorded has both: the run (never submitted) and the error.
    """

    index: int
    run: Run | None
    error: GatewayError | None = None
    replayed: bool = False


@dataclass(frozen=True)
class BatchOutcome:
    items: list[ItemOutcome]

    @property
    def replayed(self) -> bool:
        """Every item's run was made by an earlier request with the same keys."""
        return bool(self.items) and all(i.replayed for i in self.items)

    @property
    def failed(self) -> int:
        """How many items have an error."""
        return sum(1 for i in self.items if i.error is not None)


@dataclass
class _Pending:
    """An item on its way: what is known of it so far."""

    index: int
    spec: RunSpec
    claim: IdempotencyClaim | None
    admitted: Admitted | None = None
    new: NewRun | None = None
    inputs: list[ResolvedInput] = field(default_factory=list)
    audit: AuditEntry | None = None


def item_key(batch_key: str | None, index: int, own: str | None) -> str | None:
    """The Idempotency-Key an item is recorded under: its own, else ``<batch key>#<index>`` (``#`` is
    not allowed in a client's key, so a derived key never meets one a client chose)."""
    if own is not None:
        return own
    return None if batch_key is None else f"{batch_key}#{index}"


def submit_batch(
    service: RunService,
    items: Sequence[BatchItem],
    *,
    principal: Principal,
    partial: bool = False,
    idempotency_key: str | None = None,
) -> BatchOutcome:
    """Submit ``items`` as one batch (the module's steps); each item's outcome, in order.

    Raises SpecError for an empty batch or one longer than ``batch_max_items``, and BatchRejected,
    with every refused item's index and error, when the batch is all-or-none and any item would be
    refused (nothing is recorded then).
    """
    limit = service.settings.batch_max_items
    if not items or len(items) > limit:
        raise SpecError(
            [SpecIssue("items", f"a batch holds 1 to {limit} runs (batch_max_items); split it", len(items))],
            what="batch",
        )
    outcomes: dict[int, ItemOutcome] = {}
    pending = _read_items(service, items, principal, idempotency_key, outcomes)
    pending = _replay_claimed(service, pending, outcomes)
    # One pass: the projects, site options and clusters as of one moment, read once for the batch.
    with service.admission.access.snapshot():
        pending = _admit(service, pending, principal, outcomes)
        if outcomes and not partial:
            # A replayed item's error (Slurm refused its run, or it was never submitted) is a fact of
            # the earlier request, answered per item: all or none counts only this request's refusals.
            refused = [
                (i, o.error) for i, o in sorted(outcomes.items()) if o.error is not None and not o.replayed
            ]
            if refused:
                for _, error in refused:
                    service.metrics.refused(refusal_reason(error))
                raise BatchRejected(refused, len(items))
        pending = _render(service, pending, principal, outcomes)
        if pending:
            _record_and_send(service, pending, outcomes)
    for outcome in outcomes.values():
        if outcome.error is not None and outcome.run is None:
            service.metrics.refused(refusal_reason(outcome.error))
        elif outcome.run is not None and not outcome.replayed:
            service.metrics.submitted(outcome.run.project, outcome.run.queue)
    return BatchOutcome([outcomes[i] for i in range(len(items))])


def _item_error(index: int, exc: GatewayError) -> GatewayError:
    """``exc`` with its spec issues' paths under the item (``items.3.spec.resources.mem_gb``)."""
    if isinstance(exc, SpecError) and exc.what == "run spec":
        issues = [
            SpecIssue(f"items.{index}.spec" + (f".{i.path}" if i.path else ""), i.message, i.value)
            for i in exc.issues
        ]
        moved = SpecError(issues, exc.source, exc.location, exc.what)
        moved.__cause__ = exc
        return moved
    return exc


def _read_items(
    service: RunService,
    items: Sequence[BatchItem],
    principal: Principal,
    batch_key: str | None,
    outcomes: dict[int, ItemOutcome],
) -> list[_Pending]:
    pending = []
    for index, item in enumerate(items):
        try:
            spec = item.spec if isinstance(item.spec, RunSpec) else build_spec(item.spec)
        except SpecError as exc:
            outcomes[index] = ItemOutcome(index, None, _item_error(index, exc))
            continue
        key = item_key(batch_key, index, item.idempotency_key)
        claim = claim_key(principal, key, "run.submit", spec, ttl_s=service.settings.idempotency_ttl_s)
        pending.append(_Pending(index, spec, claim))
    keys = [p.claim.key for p in pending if p.claim is not None]
    if len(keys) != len(set(keys)):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise SpecError(
            [SpecIssue("items", "each item needs its own Idempotency-Key; given more than once", twice[:5])],
            what="batch",
        )
    return pending


def _replay_claimed(
    service: RunService, pending: list[_Pending], outcomes: dict[int, ItemOutcome]
) -> list[_Pending]:
    """Items whose key an earlier request claimed get that request's run (or its error) back."""
    claims = [p.claim for p in pending if p.claim is not None]
    if not claims:
        return pending
    earlier = service.store.claimed_keys(claims[0].user, [c.key for c in claims])
    left = []
    for item in pending:
        found = earlier.get(item.claim.key) if item.claim is not None else None
        if found is None or item.claim is None:
            left.append(item)
            continue
        try:
            outcomes[item.index] = ItemOutcome(
                item.index, replay(service.store, item.claim, found).run, replayed=True
            )
        except GatewayError as exc:
            run = service.store.get_run(found.run_id) if getattr(exc, "run_id", None) else None
            outcomes[item.index] = ItemOutcome(item.index, run, exc, replayed=run is not None)
    return left


def _admit(
    service: RunService, pending: list[_Pending], principal: Principal, outcomes: dict[int, ItemOutcome]
) -> list[_Pending]:
    """Each item admitted as one run is, then the batch's caps counted over the admitted items."""
    admitted = []
    for item in pending:
        try:
            item.admitted = service.admission.admit(item.spec, principal)
        except GatewayError as exc:
            outcomes[item.index] = ItemOutcome(item.index, None, _item_error(item.index, exc))
            continue
        admitted.append(item)
    return _within_caps(admitted, principal, outcomes)


def _within_caps(
    pending: list[_Pending], principal: Principal, outcomes: dict[int, ItemOutcome]
) -> list[_Pending]:
    """The items, in order, as long as the batch so far fits each cap it counts against: monthly
    GPU-hours (every run's walltime x GPUs, each array task counted) and jobs in queue (a run is one
    job, an array one per task). An item past a cap is refused, QuotaExceeded, with the totals.

    GPUs at once is not counted: a batch's runs may wait for each other, as single runs do."""
    used: dict[str, tuple[float, int]] = {}
    fitting = []
    for item in pending:
        assert item.admitted is not None
        project = item.admitted.project
        tasks = len(item.spec.sweep.expand()) if item.spec.sweep else 1
        ask = Ask.of(item.spec, walltime_min=item.admitted.walltime.minutes)
        caps: list[tuple[str, Quota]] = [(f"project {project.name}", project.quota)]
        member = next((m for m in project.members if m.user == principal.user), None)
        if member is not None:
            caps.append((f"user {principal.user} in project {project.name}", member.quota))
        problems = []
        for scope, quota in caps:
            hours, jobs = used.get(scope, (0.0, 0))
            hours, jobs = hours + ask.gpu_hours * tasks, jobs + tasks
            cap_hours, cap_jobs = quota.gpu_hours_per_month, quota.jobs_in_queue
            if cap_hours is not None and hours > cap_hours:
                problems.append(
                    f"the batch up to this run may use {hours:g} GPU-hours, over the monthly cap of {scope} "
                    f"({cap_hours}): send fewer runs, shorter walltimes or fewer GPUs"
                )
            if cap_jobs is not None and jobs > cap_jobs:
                problems.append(
                    f"the batch up to this run queues {jobs} jobs, over the jobs-in-queue cap of {scope} "
                    f"({cap_jobs}): send at most {cap_jobs} at once"
                )
        if problems:
            outcomes[item.index] = ItemOutcome(
                item.index,
                None,
                QuotaExceeded("this run does not fit the batch's caps: " + "; ".join(problems)),
            )
            continue
        for scope, _ in caps:
            hours, jobs = used.get(scope, (0.0, 0))
            used[scope] = (hours + ask.gpu_hours * tasks, jobs + tasks)
        fitting.append(item)
    return fitting


def _render(
    service: RunService, pending: list[_Pending], principal: Principal, outcomes: dict[int, ItemOutcome]
) -> list[_Pending]:
    """Each item's inputs resolved and script rendered, as one run's are; nothing written yet."""
    ready = []
    for item in pending:
        assert item.admitted is not None
        run_id = new_run_id()
        run_dir = str(service.settings.runs_dir / run_id)
        try:
            item.inputs = resolve_inputs(item.spec, run_dir, principal=principal, datasets=service.datasets)
            launch = resolve_environment(item.spec, principal=principal, catalog=service.environments)
            item.new = service._new_run(
                item.spec, run_id, run_dir, principal, item.admitted, item.inputs, None, launch
            )
        except GatewayError as exc:
            outcomes[item.index] = ItemOutcome(item.index, None, _item_error(item.index, exc))
            continue
        item.audit = submit_audit(item.new, principal, item.admitted, item.inputs, None, batch=True)
        ready.append(item)
    return ready


def _backend(service: RunService, cluster: str | None) -> ClusterSlurm | GatewayError:
    """The backend of ``cluster``, or why there is none (its sends record that error)."""
    try:
        return service.clusters.get(cluster)
    except GatewayError as exc:
        return exc


def _record_and_send(service: RunService, pending: list[_Pending], outcomes: dict[int, ItemOutcome]) -> None:
    """One transaction for every run, then each attempt sent, ``batch_submit_parallel`` at once."""
    written = service.store.create_runs([(p.new, p.audit, p.claim) for p in pending if p.new is not None])
    to_send: list[tuple[_Pending, Run]] = []
    for item, run in zip(pending, written, strict=True):
        if run is not None:
            to_send.append((item, run))
            continue
        assert item.claim is not None  # a concurrent request with the same key won the race
        earlier = service.store.claimed_key(item.claim.user, item.claim.key)
        assert earlier is not None
        try:
            outcomes[item.index] = ItemOutcome(
                item.index, replay(service.store, item.claim, earlier).run, replayed=True
            )
        except GatewayError as exc:
            outcomes[item.index] = ItemOutcome(item.index, None, exc)

    # Each cluster's backend looked up here, in the batch's snapshot, not once per run in the sending
    # threads (which the snapshot does not reach: each look-up would read the access generation).
    backends = {c: _backend(service, c) for c in {run.attempts[0].cluster for _, run in to_send}}

    def send(pair: tuple[_Pending, Run]) -> ItemOutcome | tuple[_Pending, Run, str | None]:
        """Prepare, make the run directory, transmit: the job id (recorded after, for all at once)."""
        item, run = pair
        attempt = run.attempts[0]
        backend = backends[attempt.cluster]
        try:
            if isinstance(backend, GatewayError):
                raise backend
            submission = Submission.prepare(
                backend,
                service.store,
                tag=attempt.tag,
                as_user=run.os_user,
                comment=item.spec.comment,
                mail_user=item.spec.mail_user,
                script_path=service.first.script_path(run.run_dir),
            )
        except GatewayError as exc:
            service.store.mark_never_submitted(
                attempt.id, f"cannot start the submission: {exc}", source="gateway"
            )
            return ItemOutcome(item.index, service.store.get_run(run.id), exc)
        try:
            service.first.prepare_dir(run, item.inputs, submission)
            return item, run, submission.transmit(attempt, run.script)
        except GatewayError as exc:
            exc.run_id = run.id  # type: ignore[attr-defined]  # the interfaces name the run
            return ItemOutcome(item.index, service.store.get_run(run.id), exc)

    workers = max(1, min(service.settings.batch_submit_parallel, len(to_send)))
    if workers == 1:
        results = [send(pair) for pair in to_send]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="batch-submit") as pool:
            results = list(pool.map(send, to_send))
    answered: list[tuple[_Pending, Run, str]] = []
    for result in results:
        if isinstance(result, ItemOutcome):
            outcomes[result.index] = result
        elif result[2] is None:  # Slurm did not answer: SUBMITTING, with the note, until reconciled
            outcomes[result[0].index] = ItemOutcome(result[0].index, service.store.get_run(result[1].id))
        else:
            answered.append((result[0], result[1], result[2]))
    recorded = record_sent(
        service.store, [(run.attempts[0], job) for _, run, job in answered], source="gateway"
    )
    for item, run, _ in answered:
        sent = recorded.get(run.attempts[0].id)
        current = queued(run, sent) if sent is not None else service.store.get_run(run.id)
        outcomes[item.index] = ItemOutcome(item.index, current)
