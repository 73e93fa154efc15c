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

Beside this module: the items asked and answered (``batch_items``), the caps counted over the
batch (``batch_caps``, step 2) and the recording and sending (``batch_send``, steps 4 and 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gateway.adapters.prometheus import GatewayMetrics
from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.core.access.values import Principal
from gateway.core.envs.record import EnvLaunch
from gateway.core.runs.values import NewRun
from gateway.core.spec.run_spec import RunSpec, build_spec
from gateway.errors import BatchRejected, GatewayError, SpecError, SpecIssue
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.lineage.datasets import DatasetService
from gateway.services.ops.prometheus import refusal_reason
from gateway.services.runs.admission import Admission, Admitted
from gateway.services.runs.batch_caps import within_caps
from gateway.services.runs.batch_items import (
    BatchItem,
    BatchOutcome,
    ItemOutcome,
    PendingItem,
    item_error,
    item_key,
)
from gateway.services.runs.batch_send import record_and_send
from gateway.services.runs.first_attempt import FirstAttempt
from gateway.services.runs.inputs import ResolvedInput, resolve_environment, resolve_inputs
from gateway.services.runs.new_runs import new_run_id, submit_audit
from gateway.services.runs.replay import claim_key, replay
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
            record_and_send(
                pending,
                outcomes,
                store=service.store,
                clusters=service.clusters,
                first=service.first,
                parallel=service.settings.batch_submit_parallel,
            )
    for outcome in outcomes.values():
        if outcome.error is not None and outcome.run is None:
            service.metrics.refused(refusal_reason(outcome.error))
        elif outcome.run is not None and not outcome.replayed:
            service.metrics.submitted(outcome.run.project, outcome.run.queue)
    return BatchOutcome([outcomes[i] for i in range(len(items))])


def _read_items(
    service: RunService,
    items: Sequence[BatchItem],
    principal: Principal,
    batch_key: str | None,
    outcomes: dict[int, ItemOutcome],
) -> list[PendingItem]:
    pending = []
    for index, item in enumerate(items):
        try:
            spec = item.spec if isinstance(item.spec, RunSpec) else build_spec(item.spec)
        except SpecError as exc:
            outcomes[index] = ItemOutcome(index, None, item_error(index, exc))
            continue
        key = item_key(batch_key, index, item.idempotency_key)
        claim = claim_key(principal, key, "run.submit", spec, ttl_s=service.settings.idempotency_ttl_s)
        pending.append(PendingItem(index, spec, claim))
    keys = [p.claim.key for p in pending if p.claim is not None]
    if len(keys) != len(set(keys)):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise SpecError(
            [SpecIssue("items", "each item needs its own Idempotency-Key; given more than once", twice[:5])],
            what="batch",
        )
    return pending


def _replay_claimed(
    service: RunService, pending: list[PendingItem], outcomes: dict[int, ItemOutcome]
) -> list[PendingItem]:
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
    service: RunService, pending: list[PendingItem], principal: Principal, outcomes: dict[int, ItemOutcome]
) -> list[PendingItem]:
    """Each item admitted as one run is, then the batch's caps counted over the admitted items."""
    admitted = []
    for item in pending:
        try:
            item.admitted = service.admission.admit(item.spec, principal)
        except GatewayError as exc:
            outcomes[item.index] = ItemOutcome(item.index, None, item_error(item.index, exc))
            continue
        admitted.append(item)
    return within_caps(admitted, principal, outcomes)


def _render(
    service: RunService, pending: list[PendingItem], principal: Principal, outcomes: dict[int, ItemOutcome]
) -> list[PendingItem]:
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
            outcomes[item.index] = ItemOutcome(item.index, None, item_error(item.index, exc))
            continue
        item.audit = submit_audit(item.new, principal, item.admitted, item.inputs, None, batch=True)
        ready.append(item)
    return ready
