"""``GatewayClient``'s calls about runs: submitting, checking, reading, cancelling, their files."""

from __future__ import annotations

from typing import Any

from gateway.client.api_base import ApiBase


class RunCalls(ApiBase):
    """``/runs`` and ``/runs/{id}/...``: each method one request, its JSON answer (``ApiBase``)."""

    def submit(self, spec: dict, *, idempotency_key: str | None = None) -> dict:
        """``POST /runs``: submit ``spec``, retried under one Idempotency-Key (``_submit``); the run."""
        return self._submit("/runs", spec, idempotency_key)

    def submit_batch(
        self, items: list[dict], *, partial: bool = False, idempotency_key: str | None = None
    ) -> dict:
        """``POST /runs/batch``: submit every item (``{"spec": ..., "idempotency_key": ...}``) in one
        request, retried under one Idempotency-Key like ``submit`` (each item's key is the batch's
        ``#<index>`` unless it has its own); the per-item answers (``RunBatchPublic``)."""
        return self._submit("/runs/batch", {"items": items, "partial": partial}, idempotency_key)

    def check(self, spec: dict, *, slurm_test: bool = False) -> dict:
        """``POST /runs/check``: what submitting ``spec`` would do (``RunCheckPublic``); nothing is made."""
        params = {"slurm_test": "true"} if slurm_test else None
        return self._call("POST", "/runs/check", json_body=spec, params=params)

    def runs(self, **filters: Any) -> dict:
        """``GET /runs``: one page of runs (``RunsPublic``); ``filters`` left None are not sent."""
        return self._call("GET", "/runs", params={k: v for k, v in filters.items() if v is not None})

    def run(self, run_id: str) -> dict:
        """``GET /runs/{id}``: the run (``RunPublic``), with why it waits and its reruns."""
        return self._call("GET", f"/runs/{run_id}")

    def run_cost(self, run_id: str) -> dict:
        """``GET /runs/{id}/cost``: the run's cost per accounting record, totals (``RunCostPublic``)."""
        return self._call("GET", f"/runs/{run_id}/cost")

    def rerun(self, run_id: str, body: dict, *, idempotency_key: str | None = None) -> dict:
        """``POST /runs/{id}/rerun``: a new run derived from ``run_id``, retried like ``submit``."""
        return self._submit(f"/runs/{run_id}/rerun", body, idempotency_key)

    def cancel(self, run_id: str) -> dict:
        """``POST /runs/{id}/cancel``: the run after the cancel (``RunPublic``)."""
        return self._call("POST", f"/runs/{run_id}/cancel")

    def logs(self, run_id: str, **params: Any) -> dict:
        """``GET /runs/{id}/logs``: one chunk of a job file (``LogChunkPublic``); None params are not sent."""
        return self._call(
            "GET", f"/runs/{run_id}/logs", params={k: v for k, v in params.items() if v is not None}
        )

    def tasks(self, run_id: str, *, attempt: int | None = None) -> dict:
        """``GET /runs/{id}/tasks``: a sweep's array tasks (``SweepTasksPublic``)."""
        params = {} if attempt is None else {"attempt": attempt}
        return self._call("GET", f"/runs/{run_id}/tasks", params=params)

    def task(self, run_id: str, index: int, *, attempt: int | None = None) -> dict:
        """``GET /runs/{id}/tasks/{i}``: one task of a sweep, its series included (``SweepTaskPublic``)."""
        params = {} if attempt is None else {"attempt": attempt}
        return self._call("GET", f"/runs/{run_id}/tasks/{index}", params=params)

    def run_outputs(self, run_id: str) -> dict:
        """``GET /runs/{id}/outputs``: its artifacts, metrics and harvests (``RunOutputsPublic``)."""
        return self._call("GET", f"/runs/{run_id}/outputs")

    def run_telemetry(self, run_id: str, *, samples: bool = False) -> dict:
        """``GET /runs/{id}/telemetry``: per-attempt GPU summaries (``RunTelemetryPublic``)."""
        return self._call(
            "GET", f"/runs/{run_id}/telemetry", params={"samples": "true" if samples else "false"}
        )

    def compare(self, run_a: str, run_b: str) -> dict:
        """``GET /runs/{a}/compare/{b}``: how two runs differ (``ComparePublic``)."""
        return self._call("GET", f"/runs/{run_a}/compare/{run_b}")

    def run_environment(self, run_id: str) -> dict:
        """``GET /runs/{id}/environment``: the version a run named and what each job found."""
        return self._call("GET", f"/runs/{run_id}/environment")

    def run_handoff(self, run_id: str) -> dict[str, Any]:
        """``GET /runs/{run_id}/handoff``: the run's MLflow tracking link and hand-off items."""
        return self._call("GET", f"/runs/{run_id}/handoff")

    def sync_run(self, run_id: str) -> dict[str, Any]:
        """``POST /runs/{run_id}/handoff/mlflow``: log the run to MLflow tracking now (idempotent)."""
        return self._call("POST", f"/runs/{run_id}/handoff/mlflow")
