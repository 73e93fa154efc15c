"""A sweep's tasks as the API shows them (``GET /runs/{id}/tasks``, ``GET /runs/{id}/tasks/{i}``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from gateway.core.runs.tasks import SweepTask


class TaskArtifactPublic(BaseModel):
    path: str = Field(description="Relative to the run directory (tasks/<index>/...)")
    size_bytes: int
    sha256: str
    attempt: int


class SweepTaskPublic(BaseModel):
    run_id: str
    attempt: int = Field(description="The attempt whose array this task belongs to")
    index: int = Field(description="The Slurm array index (SLURM_ARRAY_TASK_ID)")
    params: dict[str, Any] = Field(
        description="What the task ran with: the sweep point over the run's params"
    )
    point: dict[str, Any] = Field(description="The sweep point alone (what varies between the tasks)")
    state: str = Field(description="pending, running, succeeded, failed ...; unknown until Slurm reported it")
    job_id: str | None = Field(description="The task's own Slurm job id; null until Slurm reported it")
    array_job_id: str | None = Field(description="The array's job id")
    exit_code: int | None
    exit_signal: int | None
    elapsed_s: int | None
    node_list: str | None
    task_dir: str = Field(description="The task's own directory (GW_TASK_DIR): its metrics files and outputs")
    logs: str = Field(description="Where its stdout is read: GET this path (add &stream=stderr)")
    metrics: dict[str, float] = Field(description="Final values: a summary file's, else a series' last point")
    series: dict[str, list[tuple[int | None, float]]] | None = Field(
        default=None, description="Every (step, value) point per metric; only in GET /runs/{id}/tasks/{i}"
    )
    artifacts: list[TaskArtifactPublic] = Field(
        description="The run's harvested outputs under tasks/<index>/"
    )
    notes: list[str] = Field(description="Why a metrics file of the task was not read, ...")

    @classmethod
    def of(cls, task: SweepTask, *, series: bool) -> SweepTaskPublic:
        fields = {k: v for k, v in task.__dict__.items() if k not in ("series", "artifacts")}
        return cls(
            **fields,
            logs=f"/runs/{task.run_id}/logs?task={task.index}&attempt={task.attempt}",
            series=task.series if series else None,
            artifacts=[TaskArtifactPublic(**a) for a in task.artifacts],
        )


class SweepTasksPublic(BaseModel):
    run_id: str
    attempt: int
    array_job_id: str | None
    tasks: list[SweepTaskPublic] = Field(description="Every task of the array, in index order")
    metric_names: list[str] = Field(description="Every metric some task has a final value of")
