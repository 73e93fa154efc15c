"""Run submission routes: submit one run, a batch, check one without submitting. Each is one service
call; a submission answers 201 serialized once (``submitted_response``, also a rerun's)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Header, Query, Response, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.routes.run_params import ERRORS, IdempotencyKey
from gateway.api.schemas import RunCheckPublic, RunPublic
from gateway.api.schemas_batch import BatchRejectedPublic, RunBatchCreate, RunBatchPublic
from gateway.core.spec.run_spec import RunSpec
from gateway.services.runs.replay import Submitted

router = APIRouter(prefix="/runs", tags=["runs"])

SPEC_EXAMPLES = {
    "single": {
        "summary": "A one-node CPU training run",
        "value": {
            "name": "tiny-lm",
            "project": "demo",
            "queue": "cpu",
            "command": "python3 examples/tiny_lm/train.py --epochs 5",
            "workdir": "/srv/gateway",
            "params": {"lr": 0.3, "seed": 1},
            "resources": {"cpus_per_task": 1, "mem_gb": 0.5, "walltime_min": 5},
        },
    },
    "gpu-sweep": {
        "summary": "A GPU sweep: one Slurm job array, one task per param set",
        "value": {
            "name": "lr-sweep",
            "project": "demo",
            "queue": "gpu",
            "command": ["python3", "train.py"],
            "resources": {"gpus_per_node": 1, "gpu_type": "fake", "mem_gb": 2},
            "sweep": {"grid": {"lr": [0.1, 0.01], "seed": [1, 2]}, "max_parallel": 2},
        },
    },
}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=RunPublic,
    responses={409: ERRORS[409], 422: ERRORS[422], 503: ERRORS[503]},
    summary="Submit a run",
)
def submit_run(
    spec: Annotated[RunSpec, Body(openapi_examples=SPEC_EXAMPLES)],
    services: ServicesDep,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,  # type: ignore[assignment]  # a plain string in OpenAPI; absent: None
) -> Response:
    """Record, render and submit a run to Slurm (exactly once).

    The run comes back in state ``queued`` with its Slurm job id, or
    ``submitting`` when Slurm did not answer in time (the gateway settles it
    by looking up the attempt's tag). A job Slurm refuses gives 422
    ``submit_rejected`` with Slurm's message; the run stays on record.
    """
    submitted = services.runs.submit_keyed(spec, principal=principal, idempotency_key=idempotency_key)
    return submitted_response(submitted)


BATCH_KEY = Annotated[
    str,
    Header(
        alias="Idempotency-Key",
        pattern=r"^[A-Za-z0-9._:-]{8,120}$",
        description="A key of the client's choosing for the whole batch: each item without a key of its own "
        "is remembered as <key>#<index>, so the same batch again (a retry after a cut connection) gets "
        "every run the first request made back, marked replayed. Remembered for a day.",
    ),
]


@router.post(
    "/batch",
    response_model=RunBatchPublic,
    responses={
        409: ERRORS[409],
        422: {
            "model": BatchRejectedPublic,
            "description": "All or none (no partial): items that would be refused, each at its index "
            "(batch_rejected); or the batch itself is malformed or too long",
        },
        503: ERRORS[503],
    },
    summary="Submit many runs at once",
)
def submit_batch(
    body: RunBatchCreate,
    services: ServicesDep,
    principal: PrincipalDep,
    idempotency_key: BATCH_KEY = None,  # type: ignore[assignment]  # a plain string in OpenAPI; absent: None
) -> Response:
    """Submit up to ``batch_max_items`` runs (1,000 by default) in one request: one authentication,
    one admission pass (the batch's GPU-hours and jobs counted together against the caps), one
    transaction recording every run, then each sent to Slurm exactly once, several at a time.

    Answers 200 with one answer per item, in order: its run (state ``queued`` with its job id, or
    ``submitting`` when Slurm did not answer in time) or its error, with the status ``POST /runs``
    would have given it. Without ``partial``, any item that would be refused refuses the batch
    (422 ``batch_rejected``, every such item listed; nothing is recorded). A job Slurm refuses after
    its run was recorded is that item's ``submit_rejected``, with the run."""
    outcome = services.runs.submit_batch(
        body.batch(), principal=principal, partial=body.partial, idempotency_key=idempotency_key
    )
    headers = {"Idempotent-Replayed": "true"} if outcome.replayed else None
    return Response(
        RunBatchPublic.of(outcome).model_dump_json(), headers=headers, media_type="application/json"
    )


@router.post(
    "/check",
    response_model=RunCheckPublic,
    responses={404: ERRORS[404], 422: ERRORS[422], 503: ERRORS[503]},
    summary="Check a run without submitting it",
)
def check_run(
    spec: Annotated[RunSpec, Body(openapi_examples=SPEC_EXAMPLES)],
    services: ServicesDep,
    principal: PrincipalDep,
    slurm_test: Annotated[
        bool, Query(description="Also ask Slurm's own sbatch --test-only, as the run's OS user")
    ] = False,
) -> RunCheckPublic:
    """Everything a submission checks before it writes (project, queue, GPU type, walltime,
    whole-node memory, quota, OS user, output paths, datasets), and the rendered script; with
    ``slurm_test``, Slurm's own ``sbatch --test-only`` of that script: when and where it would
    start, or 422 ``submit_rejected`` with Slurm's refusal. No run is recorded, no job queued
    (``gw sbatch --test-only``)."""
    return RunCheckPublic.of(services.runs.check(spec, principal=principal, slurm_test=slurm_test))


def submitted_response(submitted: Submitted) -> Response:
    """The submitted run as a 201 answer, serialized once.

    Returned as a ``Response`` (``response_model`` still documents it): FastAPI would otherwise dump
    the ``RunPublic`` to a dict, validate that into a ``RunPublic`` again and serialize the copy,
    three passes over a run's few kilobytes on the hottest route (docs/performance.md).
    """
    headers = {"Idempotent-Replayed": "true"} if submitted.replayed else None
    public = RunPublic.of(submitted.run)
    if submitted.warnings:
        public.warnings = list(submitted.warnings)
    return Response(
        public.model_dump_json(),
        status_code=status.HTTP_201_CREATED,
        headers=headers,
        media_type="application/json",
    )
