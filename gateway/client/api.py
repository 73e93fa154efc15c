"""The CLI's HTTP client: one place that talks to the API and turns its errors into ``ApiError``.

``GatewayClient`` is the API as one method per call, its parts by topic: the HTTP half
(``api_base``), runs (``api_runs``), data, environments and lineage (``api_data``), evaluation and
the model registry (``api_evals``); projects, retention, audit, tokens, the site and the hand-off
are here.
"""

from __future__ import annotations

from typing import Any

from gateway.client.api_base import RETRIED_STATUSES, RETRY_PAUSES_S
from gateway.client.api_data import DataCalls
from gateway.client.api_evals import EvalCalls
from gateway.client.api_runs import RunCalls
from gateway.client.errors import ApiError

__all__ = ["RETRIED_STATUSES", "RETRY_PAUSES_S", "ApiError", "GatewayClient"]


class GatewayClient(RunCalls, DataCalls, EvalCalls):
    """The gateway's API over HTTP, as ``settings`` (URL, token, timeout) reach it.

    Each method is one request and returns the answer's JSON body. Every one raises ``ApiError``:
    with the API's status and error kind when it refuses, status 0 when the gateway cannot be reached.
    """

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

    # -- retention (docs/retention.md) ------------------------------------------------------------
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
