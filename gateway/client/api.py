"""The CLI's HTTP client: one place that talks to the API and turns its errors into ``ApiError``."""

from __future__ import annotations

import time
import uuid
from typing import Any

from gateway import __version__
from gateway.client.errors import ApiError
from gateway.client.settings import ClientSettings
from gateway.client.transport import Answer, Transport, TransportError, UnusableUrl

# A submission is retried, with its Idempotency-Key, after a cut connection (status 0) or a gateway
# that is briefly unavailable; pauses between tries, in seconds.
RETRIED_STATUSES = frozenset({0, 502, 503})
RETRY_PAUSES_S = (0.5, 1.0, 2.0)


class GatewayClient:
    """The gateway's API over HTTP, as ``settings`` (URL, token, timeout) reach it.

    Each method is one request and returns the answer's JSON body. Every one raises ``ApiError``:
    with the API's status and error kind when it refuses, status 0 when the gateway cannot be reached.
    """

    def __init__(
        self, settings: ClientSettings, *, retry_pauses_s: tuple[float, ...] = RETRY_PAUSES_S
    ) -> None:
        self.settings = settings
        self.retry_pauses_s = retry_pauses_s
        headers = {"User-Agent": f"gw/{__version__}", "Accept": "application/json"}
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        self._http = Transport(settings.url, headers=headers, timeout_s=settings.timeout_s)

    def close(self) -> None:
        """Close the kept-alive connection (a later call opens another)."""
        self._http.close()

    def _answer(self, method: str, path: str, **kwargs: Any) -> Answer:
        """The answer to one request, when it is not an error; ``ApiError`` when it is, or none came."""
        try:
            answer = self._http.request(method, path, **kwargs)
        except UnusableUrl as exc:
            raise ApiError(0, "bad_url", f"{exc}: set GW_URL or url in ~/.config/gw/config.toml") from exc
        except TransportError as exc:
            raise ApiError(
                0,
                "server_unreachable",
                f"cannot reach the gateway at {self.settings.url} ({exc}); "
                "is `gw serve` running? Set GW_URL or url in ~/.config/gw/config.toml",
            ) from exc
        if answer.status >= 400:
            try:
                body = answer.json()
            except ValueError:
                body = None
            if not isinstance(body, dict):
                body = {"error": "http_error", "detail": answer.text[:500] or f"HTTP {answer.status}"}
            raise ApiError(
                answer.status,
                body.get("error", "http_error"),
                body.get("detail"),
                body.get("run_id"),
                body=body,
            )
        return answer

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request; its answer's JSON body."""
        answer = self._answer(method, path, **kwargs)
        if not answer.body:
            return None
        try:
            return answer.json()
        except ValueError as exc:
            raise ApiError(
                answer.status,
                "bad_answer",
                f"the gateway answered {method} {path} with no JSON: {answer.text[:200]!r}",
            ) from exc

    def _bytes(self, path: str, params: dict[str, Any]) -> bytes:
        """GET ``path`` and return the answer's body as bytes (an error still raises ``ApiError``)."""
        return self._answer("GET", path, params=params).body

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

    def request(self, method: str, path: str, *, body: Any = None, params: dict | None = None) -> Any:
        """Any one API call (``gw poc`` walks routes the other methods do not wrap); its JSON answer.
        None params are not sent."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        return self._call(method, path, json_body=body, params=query or None)

    def mirror_status(self, project: str, model: str) -> dict[str, Any]:
        """``GET /models/{project}/{model}/mirror``: the MLflow mirror, webhook deliveries and drift."""
        return self._call("GET", f"/models/{project}/{model}/mirror")

    def run_handoff(self, run_id: str) -> dict[str, Any]:
        """``GET /runs/{run_id}/handoff``: the run's MLflow tracking link and hand-off items."""
        return self._call("GET", f"/runs/{run_id}/handoff")

    def sync_run(self, run_id: str) -> dict[str, Any]:
        """``POST /runs/{run_id}/handoff/mlflow``: log the run to MLflow tracking now (idempotent)."""
        return self._call("POST", f"/runs/{run_id}/handoff/mlflow")

    def handoff_items(
        self, *, project: str | None = None, status: str | None = None, kind: str | None = None
    ) -> list[dict[str, Any]]:
        """``GET /handoff/items``: mirror jobs and webhook deliveries (None filters are not sent)."""
        params = {k: v for k, v in {"project": project, "status": status, "kind": kind}.items() if v}
        return self._call("GET", "/handoff/items", params=params or None)

    def replay_handoff(self, item_id: str) -> dict[str, Any]:
        """``POST /handoff/items/{item_id}/replay``: try a mirror job or delivery again now (admins)."""
        return self._call("POST", f"/handoff/items/{item_id}/replay")

    def evidence(self, kind: str, key: str, *, redact: bool) -> bytes:
        """``GET /evidence/{runs|releases|artifacts}/{key}``: the bundle as a zip archive."""
        return self._bytes(f"/evidence/{kind}/{key}", {"redact": str(redact).lower()})

    def report(self, kind: str, **params: Any) -> bytes:
        """``GET /reports/{kind}``: the report in the asked ``format`` (json, csv, table, html), as bytes;
        ``params`` left None are not sent."""
        return self._bytes(f"/reports/{kind}", {k: v for k, v in params.items() if v is not None})

    def _submit(self, path: str, body: dict, idempotency_key: str | None) -> dict:
        """POST a submission with an ``Idempotency-Key``, retried with the same key when the connection
        breaks or the gateway is briefly unavailable (the gateway then returns the first run)."""
        headers = {"Idempotency-Key": idempotency_key or f"gw-{uuid.uuid4()}"}
        for pause_s in (*self.retry_pauses_s, None):
            try:
                return self._call("POST", path, json_body=body, headers=headers)
            except ApiError as exc:
                if exc.status not in RETRIED_STATUSES or exc.kind == "bad_url" or pause_s is None:
                    raise
            time.sleep(pause_s)
        raise AssertionError("unreachable")

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

    def register_version(self, project: str, name: str, body: dict) -> dict:
        """``POST /datasets/{project}/{name}/versions``: the version, new or the same content's."""
        return self._call("POST", f"/datasets/{project}/{name}/versions", json_body=body)

    def datasets(self, project: str | None = None) -> list:
        """``GET /datasets``: the datasets the caller may read, of ``project`` only when given."""
        return self._call("GET", "/datasets", params={"project": project} if project else None)

    def dataset(self, project: str, name: str) -> dict:
        """``GET /datasets/{project}/{name}``: one dataset (``DatasetPublic``)."""
        return self._call("GET", f"/datasets/{project}/{name}")

    def dataset_versions(self, project: str, name: str) -> list:
        """``GET /datasets/{project}/{name}/versions``: every version, oldest first."""
        return self._call("GET", f"/datasets/{project}/{name}/versions")

    def dataset_version(self, project: str, name: str, version: str, *, files: bool = False) -> dict:
        """``GET .../versions/{version}``: one version (a number, ``latest`` or a digest); ``files``
        adds its manifest.
        """
        params = {"files": "true"} if files else None
        return self._call("GET", f"/datasets/{project}/{name}/versions/{version}", params=params)

    def dataset_diff(self, project: str, name: str, a: str, b: str) -> dict:
        """``GET /datasets/{project}/{name}/diff``: files added, removed and changed from ``a`` to ``b``."""
        return self._call("GET", f"/datasets/{project}/{name}/diff", params={"a": a, "b": b})

    def share_dataset(self, project: str, name: str, other: str, *, on: bool) -> dict:
        """``PUT`` (``on``) or ``DELETE`` ``.../shares/{other}``: the dataset after the change."""
        return self._call("PUT" if on else "DELETE", f"/datasets/{project}/{name}/shares/{other}")

    # -- environments -------------------------------------------------------------------------

    def register_env_version(self, project: str, name: str, body: dict) -> dict:
        """``POST /environments/{project}/{name}/versions``: the version, new or the same content's."""
        return self._call("POST", f"/environments/{project}/{name}/versions", json_body=body)

    def environments(self, project: str | None = None) -> list:
        """``GET /environments``: the caller's projects' environments, of ``project`` only when given."""
        return self._call("GET", "/environments", params={"project": project} if project else None)

    def environment(self, project: str, name: str) -> dict:
        """``GET /environments/{project}/{name}``: one environment (``EnvironmentPublic``)."""
        return self._call("GET", f"/environments/{project}/{name}")

    def env_versions(self, project: str, name: str) -> list:
        """``GET /environments/{project}/{name}/versions``: every version, oldest first."""
        return self._call("GET", f"/environments/{project}/{name}/versions")

    def env_version(self, project: str, name: str, version: str) -> dict:
        """``GET .../versions/{version}``: one version with its installed set and lock."""
        return self._call("GET", f"/environments/{project}/{name}/versions/{version}")

    def env_diff(self, a: str, b: str, *, project: str | None = None) -> dict:
        """``GET /environments/diff``: packages added, removed, upgraded, downgraded from ``a`` to ``b``
        (each ``[project/]name@version`` or a run id)."""
        params = {"a": a, "b": b, **({"project": project} if project else {})}
        return self._call("GET", "/environments/diff", params=params)

    def env_scan(self, project: str, name: str, version: str) -> dict:
        """``GET .../versions/{version}/advisories``: known advisories in the version's packages."""
        return self._call("GET", f"/environments/{project}/{name}/versions/{version}/advisories")

    def run_environment(self, run_id: str) -> dict:
        """``GET /runs/{id}/environment``: the version a run named and what each job found."""
        return self._call("GET", f"/runs/{run_id}/environment")

    def trace_artifact(self, sha256: str) -> dict:
        """``GET /lineage/artifacts/{sha256}``: the runs that wrote a file with that digest."""
        return self._call("GET", f"/lineage/artifacts/{sha256}")

    def trace_run(self, run_id: str) -> dict:
        """``GET /lineage/runs/{id}``: a run's inputs, code, environment and outputs."""
        return self._call("GET", f"/lineage/runs/{run_id}")

    def trace_dataset(self, project: str, name: str, version: str) -> dict:
        """``GET /lineage/datasets/{project}/{name}/{version}``: the runs that read the version."""
        return self._call("GET", f"/lineage/datasets/{project}/{name}/{version}")

    # -- evaluation ---------------------------------------------------------------------------

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

    def projects(self) -> list:
        """``GET /projects``: the projects the caller belongs to (all, for an admin)."""
        return self._call("GET", "/projects")

    def project(self, name: str) -> dict:
        """``GET /projects/{name}``: one project, its caps, members and queues."""
        return self._call("GET", f"/projects/{name}")

    def usage(self, project: str, *, cluster: str | None = None) -> dict:
        """``GET /projects/{project}/usage``: GPUs now, GPU-hours this month, jobs in queue, per user (on
        ``cluster``; default the first)."""
        params = {"cluster": cluster} if cluster else None
        return self._call("GET", f"/projects/{project}/usage", params=params)

    def queue(self, *, cluster: str | None = None) -> dict:
        """``GET /queue`` (admins): partitions with their nodes and jobs and every project's usage
        on each cluster it has queues on (of ``cluster`` alone when given)."""
        return self._call("GET", "/queue", params={"cluster": cluster} if cluster else None)

    # -- retention (docs/retention.md) ---------------------------------------------------------

    def holds(self, project: str | None = None, include_lifted: bool = False) -> list:
        """``GET /retention/holds``: the holds of the caller's projects (or ``project``)."""
        params: dict[str, Any] = {"include_lifted": "true"} if include_lifted else {}
        if project:
            params["project"] = project
        return self._call("GET", "/retention/holds", params=params or None)

    def hold(self, target_type: str, target_id: str, reason: str) -> dict:
        """``POST /retention/holds``: hold a run, a model (PROJECT/NAME) or a project."""
        body = {"target_type": target_type, "target_id": target_id, "reason": reason}
        return self._call("POST", "/retention/holds", json_body=body)

    def lift_hold(self, hold_id: str, reason: str) -> dict:
        """``POST /retention/holds/{id}/lift``."""
        return self._call("POST", f"/retention/holds/{hold_id}/lift", json_body={"reason": reason})

    def sweep(self, *, dry_run: bool = True, project: str | None = None, as_of: str | None = None) -> dict:
        """``POST /retention/sweep`` (admins): one pass, or (``dry_run``) what it would delete."""
        params = {"dry_run": "true" if dry_run else "false", "project": project, "as_of": as_of}
        return self._call(
            "POST", "/retention/sweep", params={k: v for k, v in params.items() if v is not None}
        )

    def storage(self, *, by: str = "project", project: str | None = None) -> dict:
        """``GET /retention/storage``: run-directory bytes per project, user or run."""
        params = {"by": by, **({"project": project} if project else {})}
        return self._call("GET", "/retention/storage", params=params)

    def run_expired(self, run_id: str) -> list:
        """``GET /retention/runs/{run_id}``: what a sweep deleted of a run, and why."""
        return self._call("GET", f"/retention/runs/{run_id}")

    def audit(self, **params: Any) -> dict:
        """``GET /audit``: one page of audit events; None params are not sent."""
        return self._call("GET", "/audit", params={k: v for k, v in params.items() if v is not None})

    def audit_verify(self) -> dict:
        """``GET /audit/verify`` (admins): whether the audit chain and its anchors hold."""
        return self._call("GET", "/audit/verify")

    def tokens(self, user: str | None = None) -> list:
        """``GET /tokens``: the caller's tokens (``user``'s, for an admin); never their secrets."""
        return self._call("GET", "/tokens", params={"user": user} if user else None)

    def issue_token(self, **body: Any) -> dict:
        """``POST /tokens``: a new token; the answer holds its secret, shown this once."""
        return self._call("POST", "/tokens", json_body=body)

    def revoke_token(self, token_id: int) -> dict:
        """``DELETE /tokens/{id}``: the token, revoked."""
        return self._call("DELETE", f"/tokens/{token_id}")

    def apply_site(self, config: dict, *, dry_run: bool, sync_slurm: bool, prune: bool = False) -> dict:
        """``POST /admin/site``: apply a site file (``dry_run``: only plan); the changes."""
        params = {"dry_run": dry_run, "sync_slurm": sync_slurm, "prune": prune}
        return self._call("POST", "/admin/site", json_body=config, params=params)

    def export_site(self) -> dict:
        """``GET /admin/site``: the site file the database holds now."""
        return self._call("GET", "/admin/site")

    def sync_slurm(self, *, dry_run: bool) -> dict:
        """``POST /admin/sync-slurm``: push the projects' caps to Slurm (``dry_run``: only plan)."""
        return self._call("POST", "/admin/sync-slurm", params={"dry_run": dry_run})

    def health(self) -> dict:
        """``GET /healthz``: the checks' answer; a 503 (degraded) is returned too (its body, with each
        check's error), not raised.
        """
        try:
            return self._call("GET", "/healthz")
        except ApiError as exc:
            if exc.status == 503:
                if isinstance(exc.body, dict) and "database" in exc.body:
                    return {**exc.body, "status": "degraded"}
                return {"status": "degraded", "detail": exc.detail}
            raise
