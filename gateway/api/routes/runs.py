"""Run routes: submit, list, show, cancel, logs, a sweep's tasks. Each is one service call."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Header, Path, Query, Response, status
from pydantic import AfterValidator, BeforeValidator

from gateway.api.deps import FileReadsDep, PrincipalDep, ServicesDep
from gateway.api.schemas import (
    ErrorPublic,
    LogChunkPublic,
    RerunRequest,
    RunCheckPublic,
    RunPublic,
    RunsPublic,
)
from gateway.api.schemas_batch import BatchRejectedPublic, RunBatchCreate, RunBatchPublic
from gateway.api.schemas_tasks import SweepTaskPublic, SweepTasksPublic
from gateway.core import names
from gateway.core.described import documented
from gateway.core.runs.paging import CURSOR_HELP, CURSOR_PATTERN, Cursor
from gateway.core.runs.tasks import metric_names
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import RunSpec
from gateway.services.runs.replay import Submitted

router = APIRouter(prefix="/runs", tags=["runs"])

IDEMPOTENCY_KEY = r"^[A-Za-z0-9._:-]{8,128}$"
RunId = Annotated[
    str, Path(description="A run id, e.g. r-3f2a9c0d1e2b4a5f", pattern=f"^{names.NAME.pattern}$")
]
ERRORS = {
    404: {"model": ErrorPublic, "description": "No such run"},
    409: {"model": ErrorPublic, "description": "The Idempotency-Key was used for another request"},
    422: {"model": ErrorPublic, "description": "Invalid request (field paths in detail)"},
    503: {"model": ErrorPublic, "description": "Database or Slurm not answering; retry"},
}

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


# Declared as a plain string (a header is text or absent; "null" is not a key): absent means None.
IdempotencyKey = Annotated[
    str,
    Header(
        alias="Idempotency-Key",
        pattern=IDEMPOTENCY_KEY,
        description="A key of the client's choosing (e.g. a UUID) for this one submission: the same key "
        "again (a retry after a cut connection) returns the run the first request made, with header "
        "Idempotent-Replayed: true; the same key with another request is 409. Remembered for a day.",
    ),
]


CursorText = Annotated[str, documented(pattern=CURSOR_PATTERN)]


def _cursor_text(text: str | None) -> str | None:
    """A cursor (checked here, so a bad one is a 422 at the query, saying what a cursor is)."""
    if text is not None:
        Cursor.decode(text)
    return text


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
    return _submitted(submitted)


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


ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
SINCE_HELP = "Only runs created at or after this time (ISO 8601; without an offset it is UTC)."
UNTIL_HELP = "Only runs created before this time (ISO 8601; without an offset it is UTC)."


def _iso(value: object) -> object:
    """A query's time as ISO 8601 text only (pydantic would take ``0.5`` as seconds since 1970)."""
    if isinstance(value, str) and not ISO_DATE.match(value):
        raise ValueError("give an ISO 8601 date-time, e.g. 2026-11-30T04:00:00Z")
    return value


def _utc(when: datetime | None) -> datetime | None:
    """``when`` as an aware datetime (a naive one is UTC)."""
    if when is None:
        return None
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


@router.get(
    "",
    response_model=RunsPublic,
    responses={422: ERRORS[422], 404: {"model": ErrorPublic, "description": "No such cluster"}},
    summary="List runs",
)
def list_runs(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=f"^{names.NAME.pattern}$")] = None,
    state: RunState | None = None,
    submitter: Annotated[str | None, Query(pattern=f"^{names.TAG.pattern}$")] = None,
    tag: Annotated[str | None, Query(pattern=f"^{names.TAG.pattern}$")] = None,
    since: Annotated[datetime | None, BeforeValidator(_iso), Query(description=SINCE_HELP)] = None,
    until: Annotated[datetime | None, BeforeValidator(_iso), Query(description=UNTIL_HELP)] = None,
    cursor: Annotated[
        CursorText | None, AfterValidator(_cursor_text), Query(description=f"Where to go on: {CURSOR_HELP}")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cluster: Annotated[
        str | None,
        Query(
            pattern=f"^{names.NAME.pattern}$",
            description="Only runs with an attempt on this Slurm cluster (404 names the clusters when it is "
            "none of them; docs/clusters.md)",
        ),
    ] = None,
) -> RunsPublic:
    """Runs, newest first, filtered (``since`` <= created_at < ``until``); follow ``next_cursor`` for more."""
    after = Cursor.decode(cursor) if cursor else None
    where = RunFilter(
        project=project,
        state=state,
        submitter=submitter,
        tag=tag,
        since=_utc(since),
        until=_utc(until),
        cluster=cluster,
        cursor=after,
        limit=limit,
    )
    return RunsPublic.of(services.runs.list(principal=principal, where=where))


@router.get("/{run_id}", response_model=RunPublic, responses={404: ERRORS[404]}, summary="Show a run")
def get_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunPublic:
    """The spec as submitted, the rendered script, every attempt with its accounting and timeline,
    and, while it waits, why (in words and numbers; from what the gateway last learned, so watching a
    run costs Slurm nothing)."""
    return RunPublic.of_view(services.runs.show(run_id, principal=principal))


@router.post(
    "/{run_id}/cancel",
    response_model=RunPublic,
    responses={404: ERRORS[404], 409: {"model": ErrorPublic, "description": "Still submitting"}},
    summary="Cancel a run",
)
def cancel_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunPublic:
    """Ask Slurm to cancel the run's live attempt. A run that already ended comes back unchanged.
    Members cancel their own runs; leads any run of the project."""
    return RunPublic.of(services.runs.cancel(run_id, principal=principal))


@router.post(
    "/{run_id}/rerun",
    status_code=status.HTTP_201_CREATED,
    response_model=RunPublic,
    responses={
        403: {
            "model": ErrorPublic,
            "description": "Not allowed: another person's run needs a lead (it runs as its owner) or as_me",
        },
        404: ERRORS[404],
        409: ERRORS[409],
        422: ERRORS[422],
    },
    summary="Fix and rerun",
)
def rerun(
    run_id: RunId,
    body: Annotated[
        RerunRequest,
        Body(openapi_examples={"more memory": {"value": {"set": ["resources.mem_gb=4"]}}}),
    ],
    services: ServicesDep,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,  # type: ignore[assignment]  # a plain string in OpenAPI; absent: None
) -> Response:
    """A new run derived from this one, with the changes recorded as a diff and a link both ways.
    The original run keeps all its evidence. A rerun of another person's run runs as its owner
    (their OS user; ``requested_by`` names the caller; leads only, and only resources and scheduling
    may change), or with ``as_me`` under the caller's own identity (audited with the command)."""
    submitted = services.runs.rerun_keyed(
        run_id,
        principal=principal,
        changes=body.set,
        spec=body.spec,
        idempotency_key=idempotency_key,
        as_me=body.as_me,
    )
    return _submitted(submitted)


AttemptQuery = Annotated[int | None, Query(ge=1, le=10_000, description="Attempt number; default latest")]


@router.get(
    "/{run_id}/logs",
    response_model=LogChunkPublic,
    responses={404: ERRORS[404], 422: ERRORS[422], 503: ERRORS[503]},
    summary="Read a run's output",
)
async def run_logs(
    run_id: RunId,
    services: ServicesDep,
    principal: PrincipalDep,
    file_reads: FileReadsDep,
    stream: Literal["stdout", "stderr"] = "stdout",
    attempt: AttemptQuery = None,
    task: Annotated[str | None, Query(pattern=r"^\d{1,7}$", description="Array task index")] = None,
    tail: Annotated[int, Query(ge=1, le=100_000, description="Lines from the end")] = 200,
    offset_bytes: Annotated[
        int | None, Query(ge=0, le=2**62, description="Byte offset to read from (follow)")
    ] = None,
) -> LogChunkPublic:
    """The tail of the job's stdout or stderr, or (with ``offset_bytes``) what was written since.

    Read on the run host with the permissions of the OS user the job ran as, at most 1 MiB a call;
    a file that is not a regular file, or that user may not read, comes back empty with
    ``problem`` saying why."""
    chunk = await file_reads.run(
        services.logs.read,
        run_id,
        principal=principal,
        stream=stream,
        attempt_number=attempt,
        task=task,
        tail_lines=tail,
        offset_bytes=offset_bytes,
    )
    return LogChunkPublic.of(chunk)


@router.get(
    "/{run_id}/tasks",
    response_model=SweepTasksPublic,
    responses={404: ERRORS[404], 422: ERRORS[422], 503: ERRORS[503]},
    summary="A sweep's tasks",
)
async def run_tasks(
    run_id: RunId,
    services: ServicesDep,
    principal: PrincipalDep,
    file_reads: FileReadsDep,
    attempt: AttemptQuery = None,
) -> SweepTasksPublic:
    """Every array task of a sweep (a spec with ``sweep:``) as its own record: its sweep point,
    state, exit, elapsed time, node, where its logs are, its final metrics (from the spec's
    ``metrics`` files in its own directory, ``GW_TASK_DIR``: recorded when the task ended, read
    live while it runs) and its artifacts. 404 for a run that is not a sweep."""
    run, shown, tasks = await file_reads.run(
        services.tasks.tasks, run_id, principal=principal, attempt_number=attempt, series=False
    )
    return SweepTasksPublic(
        run_id=run.id,
        attempt=shown.number,
        array_job_id=shown.job_id,
        tasks=[SweepTaskPublic.of(t, series=False) for t in tasks],
        metric_names=metric_names(tasks),
    )


@router.get(
    "/{run_id}/tasks/{index}",
    response_model=SweepTaskPublic,
    responses={404: ERRORS[404], 422: ERRORS[422], 503: ERRORS[503]},
    summary="One task of a sweep",
)
async def run_task(
    run_id: RunId,
    index: Annotated[int, Path(ge=0, le=4_000_000, description="The array task index")],
    services: ServicesDep,
    principal: PrincipalDep,
    file_reads: FileReadsDep,
    attempt: AttemptQuery = None,
) -> SweepTaskPublic:
    """One array task of a sweep, its metric series included."""
    task = await file_reads.run(
        services.tasks.task, run_id, index, principal=principal, attempt_number=attempt
    )
    return SweepTaskPublic.of(task, series=True)


def _submitted(submitted: Submitted) -> Response:
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
