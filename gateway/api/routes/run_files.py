"""Run routes reading what a run's jobs wrote, on the run host as the job's OS user: its logs, a
sweep's tasks (their metrics and artifacts)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from gateway.api.deps import FileReadsDep, PrincipalDep, ServicesDep
from gateway.api.routes.run_params import ERRORS, AttemptQuery, RunId
from gateway.api.schemas import LogChunkPublic
from gateway.api.schemas_tasks import SweepTaskPublic, SweepTasksPublic
from gateway.core.runs.tasks import metric_names

router = APIRouter(prefix="/runs", tags=["runs"])


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
