"""``GatewayClient``'s calls about evaluation and releases: suites, eval runs, results, gates,
reviews, and the model registry."""

from __future__ import annotations

from typing import Any

from gateway.client.api_base import ApiBase


class EvalCalls(ApiBase):
    """``/eval/...``, the eval lineage and ``/models/...``: each method one request, its JSON answer."""

    def register_suite(self, suite: dict) -> dict:
        """``POST /eval/suites``: register a suite version from its definition (the same content again: the
        existing version)."""
        return self._call("POST", "/eval/suites", json_body=suite)

    def eval_suites(self, project: str | None = None) -> list:
        """``GET /eval/suites``: the suites the caller may read, optionally of one project."""
        return self._call("GET", "/eval/suites", params={"project": project} if project else None)

    def eval_suite(self, project: str, name: str) -> dict:
        """``GET /eval/suites/{project}/{name}``: one suite with its versions."""
        return self._call("GET", f"/eval/suites/{project}/{name}")

    def set_suite_settings(self, project: str, name: str, settings: dict) -> dict:
        """``PUT /eval/suites/{project}/{name}/settings``: who may register new versions, whether
        self-reviews count (leads)."""
        return self._call("PUT", f"/eval/suites/{project}/{name}/settings", json_body=settings)

    def eval_suite_version(self, project: str, name: str, version: str) -> dict:
        """``GET /eval/suites/{project}/{name}/versions/{version}``: one immutable suite version."""
        return self._call("GET", f"/eval/suites/{project}/{name}/versions/{version}")

    def start_eval(self, body: dict, *, idempotency_key: str | None = None) -> dict:
        """``POST /eval/runs``: submit an eval run on an artifact, with an Idempotency-Key (retried as
        ``submit`` is)."""
        return self._submit("/eval/runs", body, idempotency_key)

    def eval_runs(self, **params: Any) -> list:
        """``GET /eval/runs``: eval runs, narrowed by the given filters (None values are left out)."""
        return self._call("GET", "/eval/runs", params={k: v for k, v in params.items() if v is not None})

    def eval_run(self, eval_run_id: str) -> dict:
        """``GET /eval/runs/{id}``: one eval run, with its run, artifact and ingest status."""
        return self._call("GET", f"/eval/runs/{eval_run_id}")

    def import_eval(self, project: str, name: str, version: str, body: dict) -> dict:
        """``POST /eval/suites/{project}/{name}/versions/{version}/imports``: store lm-eval output made
        elsewhere (``files``: name and text of each) as an imported result of the artifact."""
        return self._call("POST", f"/eval/suites/{project}/{name}/versions/{version}/imports", json_body=body)

    def eval_result(self, result_id: str) -> dict:
        """``GET /eval/results/{id}``: one ingested eval result with its reviews and gates."""
        return self._call("GET", f"/eval/results/{result_id}")

    def gate(self, result_id: str, baseline: str | None) -> dict:
        """``POST /eval/results/{id}/gate``: decide the gate of a result against ``baseline`` (None: the
        default)."""
        return self._call("POST", f"/eval/results/{result_id}/gate", json_body={"baseline": baseline})

    def gate_decision(self, gate_id: str) -> dict:
        """``GET /eval/gates/{id}``: one recorded gate decision."""
        return self._call("GET", f"/eval/gates/{gate_id}")

    def compare_results(self, a: str, b: str) -> dict:
        """``GET /eval/compare/{a}/{b}``: the per-task comparison of two results, nothing recorded."""
        return self._call("GET", f"/eval/compare/{a}/{b}")

    def add_review(self, body: dict) -> dict:
        """``POST /eval/reviews``: record a review of an eval result or an artifact."""
        return self._call("POST", "/eval/reviews", json_body=body)

    def reviews(self, target: str) -> list:
        """``GET /eval/reviews``: the reviews of a target (an eval result id or an artifact sha256)."""
        return self._call("GET", "/eval/reviews", params={"target": target})

    def trace_eval_result(self, result_id: str) -> dict:
        """``GET /lineage/eval-results/{id}``: a result back to its suite, data, job and training run."""
        return self._call("GET", f"/lineage/eval-results/{result_id}")

    def artifact_evals(self, sha256: str) -> dict:
        """``GET /lineage/artifacts/{sha256}/evals``: the eval runs, results and gates of an artifact."""
        return self._call("GET", f"/lineage/artifacts/{sha256}/evals")

    # -- the model registry -----------------------------------------------------------------------
    def registry(self, method: str, path: str, body: dict | None = None, params: dict | None = None) -> Any:
        """One model registry call (``/models/...``, ``/promotions/...``, ``/projects/{p}/alias-policies``,
        ``/lineage/artifacts/{sha}/releases``); its JSON answer. None params are not sent."""
        return self.request(method, path, body=body, params=params)

    def check_move(self, project: str, name: str, version: int, alias: str) -> dict:
        """``GET /models/{p}/{n}/aliases/{alias}/check``: what moving ``alias`` to release ``version``
        would count and miss (``MoveCheckPublic``); nothing moves."""
        return self._call(
            "GET", f"/models/{project}/{name}/aliases/{alias}/check", params={"version": version}
        )

    def mirror_status(self, project: str, model: str) -> dict[str, Any]:
        """``GET /models/{project}/{model}/mirror``: the MLflow mirror, webhook deliveries and drift."""
        return self._call("GET", f"/models/{project}/{model}/mirror")
