"""Run routes: submit, list, show, cancel, logs. Each is one service call."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Path, Query, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.schemas import ErrorPublic, LogChunkPublic, RerunRequest, RunPublic, RunsPublic
from gateway.core import names
from gateway.core.spec import RunSpec
from gateway.core.states import RunState
from gateway.services.logs import read_log

router = APIRouter(prefix="/runs", tags=["runs"])

RunId = Annotated[
    str, Path(description="A run id, e.g. r-3f2a9c0d1e2b4a5f", pattern=f"^{names.NAME.pattern}$")
]
ERRORS = {
    404: {"model": ErrorPublic, "description": "No such run"},
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


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=RunPublic,
    responses={422: ERRORS[422], 503: ERRORS[503]},
    summary="Submit a run",
)
def submit_run(
    spec: Annotated[RunSpec, Body(openapi_examples=SPEC_EXAMPLES)],
    services: ServicesDep,
    principal: PrincipalDep,
) -> RunPublic:
    """Record, render and submit a run to Slurm (exactly once).

    The run comes back in state ``queued`` with its Slurm job id, or
    ``submitting`` when Slurm did not answer in time (the gateway settles it
    by looking up the attempt's tag). A job Slurm refuses gives 422
    ``submit_rejected`` with Slurm's message; the run stays on record.
    """
    return RunPublic.of(services.runs.submit(spec, principal=principal))


@router.get("", response_model=RunsPublic, responses={422: ERRORS[422]}, summary="List runs")
def list_runs(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=f"^{names.NAME.pattern}$")] = None,
    state: RunState | None = None,
    submitter: Annotated[str | None, Query(pattern=f"^{names.TAG.pattern}$")] = None,
    tag: Annotated[str | None, Query(pattern=f"^{names.TAG.pattern}$")] = None,
    cursor: Annotated[
        str | None, Query(max_length=512, description="next_cursor of the previous page")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> RunsPublic:
    """Runs, newest first, filtered; follow ``next_cursor`` for more."""
    page = services.runs.list(
        principal=principal,
        project=project,
        state=state,
        submitter=submitter,
        tag=tag,
        cursor=cursor,
        limit=limit,
    )
    return RunsPublic.of(page)


@router.get("/{run_id}", response_model=RunPublic, responses={404: ERRORS[404]}, summary="Show a run")
def get_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunPublic:
    """The spec as submitted, the rendered script, every attempt with its accounting and timeline,
    and, while it waits, why (in words and numbers)."""
    run = services.runs.get(run_id, principal=principal)
    return RunPublic.of(
        run, waiting=services.waiting.explain(run), children=services.runs.store.children(run_id)
    )


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
    responses={404: ERRORS[404], 422: ERRORS[422]},
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
) -> RunPublic:
    """A new run derived from this one, with the changes recorded as a diff and a link both ways.
    The original run keeps all its evidence."""
    run = services.runs.rerun(run_id, principal=principal, changes=body.set, spec=body.spec)
    return RunPublic.of(run)


@router.get(
    "/{run_id}/logs",
    response_model=LogChunkPublic,
    responses={404: ERRORS[404], 422: ERRORS[422]},
    summary="Read a run's output",
)
def run_logs(
    run_id: RunId,
    services: ServicesDep,
    principal: PrincipalDep,
    stream: Literal["stdout", "stderr"] = "stdout",
    attempt: Annotated[
        int | None, Query(ge=1, le=10_000, description="Attempt number; default latest")
    ] = None,
    task: Annotated[str | None, Query(pattern=r"^\d{1,7}$", description="Array task index")] = None,
    tail: Annotated[int, Query(ge=1, le=100_000, description="Lines from the end")] = 200,
    offset: Annotated[
        int | None, Query(ge=0, le=2**62, description="Byte offset to read from (follow)")
    ] = None,
) -> LogChunkPublic:
    """The tail of the job's stdout or stderr, or (with ``offset``) what was written since."""
    run = services.runs.get(run_id, principal=principal)
    os_user = next((u.os_user for u in services.access.users() if u.name == run.submitter), None)
    chunk = read_log(
        run, stream=stream, attempt_number=attempt, task=task, tail_lines=tail, offset=offset, os_user=os_user
    )
    return LogChunkPublic.of(chunk)
