"""The API's JSON answers as the gateway's own values, for the Python client (``Gateway``).

A run comes back as ``gateway.core.runs.values.Run`` (its spec a ``RunSpec``, its attempts ``Attempt``
with their ``StateEvent`` timeline, states ``RunState``, times aware datetimes), as the services
pass it; what the API leaves out of a run's public form (database ids) is 0. A listing's or a
batch's rows are ``RunSummary``; a batch item's outcome is ``BatchEntry``; a sweep's task is
``gateway.core.runs.tasks.SweepTask``; a run's metrics and files are ``RunOutputs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.client.errors import ApiError
from gateway.core.lineage.values import Artifact
from gateway.core.runs.tasks import SweepTask
from gateway.core.runs.values import Attempt, Run, StateEvent
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.core.spec.run_spec import build_spec


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


@dataclass(frozen=True)
class RunSummary:
    """A run as a listing shows it (``GET /runs``, a batch's answer): who, where, its state, its job."""

    id: str
    name: str
    project: str
    queue: str
    submitter: str
    tags: list[str]
    state: RunState
    job_id: str | None
    attempt_count: int
    parent_run_id: str | None
    created_at: datetime
    updated_at: datetime
    cluster: str | None = None  # the latest attempt's Slurm cluster (None: recorded before clusters)

    @property
    def ended(self) -> bool:
        """The run is in an end state (succeeded, failed, cancelled ...)."""
        return self.state in TERMINAL

    @classmethod
    def of(cls, data: dict[str, Any]) -> RunSummary:
        """From a ``RunSummary`` (or ``RunPublic``) JSON body."""
        return cls(
            id=data["id"],
            name=data["name"],
            project=data["project"],
            queue=data["queue"],
            submitter=data["submitter"],
            tags=list(data["tags"]),
            state=RunState(data["state"]),
            job_id=data.get("job_id"),
            attempt_count=data["attempt_count"],
            parent_run_id=data.get("parent_run_id"),
            created_at=datetime.fromisoformat(data["created_at"]),
            updated_at=datetime.fromisoformat(data["updated_at"]),
            cluster=data.get("cluster"),
        )


def run_of(data: dict[str, Any]) -> Run:
    """A ``RunPublic`` JSON body as the domain's ``Run``."""
    created = datetime.fromisoformat(data["created_at"])
    updated = datetime.fromisoformat(data["updated_at"])
    return Run(
        id=data["id"],
        name=data["name"],
        project=data["project"],
        queue=data["queue"],
        submitter=data["submitter"],
        tags=list(data["tags"]),
        state=RunState(data["state"]),
        spec=build_spec(data["spec"], source=f"run {data['id']}"),
        spec_sha256=data["spec_sha256"],
        script=data["script"],
        script_sha256=data["script_sha256"],
        template_name=data["template_name"],
        template_version=data["template_version"],
        run_dir=data["run_dir"],
        created_at=created,
        updated_at=updated,
        attempts=[_attempt(data["id"], a, created, updated) for a in data.get("attempts", [])],
        parent_run_id=data.get("parent_run_id"),
        derived_diff=data.get("derived_diff"),
        code=data.get("code"),
        environment=data.get("environment"),
        os_user=data.get("os_user"),
        requested_by=data.get("requested_by"),
    )


def _attempt(run_id: str, data: dict[str, Any], created: datetime, updated: datetime) -> Attempt:
    events = [
        StateEvent(
            id=0,
            attempt_id=0,
            at=datetime.fromisoformat(e["at"]),
            from_state=RunState(e["from_state"]) if e.get("from_state") else None,
            to_state=RunState(e["to_state"]),
            slurm_state=e.get("slurm_state"),
            reason=e.get("reason"),
            source=e["source"],
        )
        for e in data.get("events", [])
    ]
    return Attempt(
        id=0,
        run_id=run_id,
        number=data["number"],
        tag=data["tag"],
        job_id=data.get("job_id"),
        state=RunState(data["state"]),
        slurm_state=data.get("slurm_state"),
        reason=data.get("reason"),
        stale=bool(data.get("stale")),
        node_list=data.get("node_list"),
        submit_time=_when(data.get("submit_time")),
        start_time=_when(data.get("start_time")),
        end_time=_when(data.get("end_time")),
        exit_code=data.get("exit_code"),
        exit_signal=data.get("exit_signal"),
        elapsed_s=data.get("elapsed_s"),
        alloc_tres=dict(data.get("alloc_tres") or {}),
        max_rss_kb=data.get("max_rss_kb"),
        cancelled_by_uid=data.get("cancelled_by_uid"),
        timelimit_min=data.get("timelimit_min"),
        tasks=dict(data.get("tasks") or {}),
        array_size=data.get("array_size"),
        expected_start=_when(data.get("expected_start")),
        created_at=events[0].at if events else created,
        updated_at=events[-1].at if events else updated,
        events=events,
        failure=data.get("failure"),
        origin=data.get("origin", "submit"),
        excluded_nodes=data.get("excluded_nodes"),
        cluster=data.get("cluster"),
    )


@dataclass(frozen=True)
class BatchEntry:
    """One item of a batch: its run (``replayed`` when an earlier request with the same key made
    it), or the ``ApiError`` the item got (with the run too when Slurm refused a recorded one)."""

    index: int
    run: RunSummary | None
    error: ApiError | None
    replayed: bool = False

    @property
    def ok(self) -> bool:
        """The item has a run and no error."""
        return self.run is not None and self.error is None

    @classmethod
    def of(cls, data: dict[str, Any]) -> BatchEntry:
        """From one ``RunBatchItemPublic``."""
        run = RunSummary.of(data["run"]) if data.get("run") else None
        error = None
        if data.get("error"):
            body = data["error"]
            error = ApiError(
                data["status"], body.get("error", "http_error"), body.get("detail"), body.get("run_id"), body
            )
        return cls(data["index"], run, error, bool(data.get("replayed")))


def task_of(data: dict[str, Any]) -> SweepTask:
    """A ``SweepTaskPublic`` JSON body as the domain's ``SweepTask``."""
    return SweepTask(
        run_id=data["run_id"],
        attempt=data["attempt"],
        index=data["index"],
        params=dict(data["params"]),
        point=dict(data["point"]),
        state=data["state"],
        job_id=data.get("job_id"),
        array_job_id=data.get("array_job_id"),
        exit_code=data.get("exit_code"),
        exit_signal=data.get("exit_signal"),
        elapsed_s=data.get("elapsed_s"),
        node_list=data.get("node_list"),
        task_dir=data["task_dir"],
        metrics={k: float(v) for k, v in data["metrics"].items()},
        series={k: [(s, float(v)) for s, v in points] for k, points in (data.get("series") or {}).items()},
        artifacts=list(data["artifacts"]),
        notes=list(data["notes"]),
    )


@dataclass(frozen=True)
class RunOutputs:
    """What a run left (``GET /runs/{id}/outputs``), as the MLflow client's ``get_run().data.metrics``,
    ``get_metric_history`` and ``list_artifacts`` give it: final ``metrics``, each metric's
    ``series`` of (step, value), the declared output files as ``Artifact`` (database ids 0), and
    ``harvested``: every attempt's outputs were read (False: look again once the run has ended and
    the gateway harvested it)."""

    run_id: str
    metrics: dict[str, float]
    series: dict[str, list[tuple[int | None, float]]]
    artifacts: list[Artifact]
    harvested: bool


def outputs_of(data: dict[str, Any]) -> RunOutputs:
    """A ``RunOutputsPublic`` JSON body as ``RunOutputs``."""
    artifacts = [
        Artifact(
            id=0,
            run_id=a["run_id"],
            attempt_id=0,
            attempt_number=a["attempt"],
            path=a["path"],
            size_bytes=a["size"],
            sha256=a["sha256"],
            created_at=datetime.fromisoformat(a["created_at"]),
        )
        for a in data["artifacts"]
    ]
    return RunOutputs(
        run_id=data["run_id"],
        metrics={k: float(v) for k, v in data["metrics"].items()},
        series={k: [(s, float(v)) for s, v in points] for k, points in data["series"].items()},
        artifacts=artifacts,
        harvested=bool(data["harvests"]) and all(h.get("at") for h in data["harvests"]),
    )
