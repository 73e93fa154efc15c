"""The CLI's HTTP client: one place that talks to the API and turns its errors into ``ApiError``."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.settings import ClientSettings


class ApiError(Exception):
    """The API answered with an error, or could not be reached (status 0)."""

    def __init__(self, status: int, kind: str, detail: Any, run_id: str | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.status = status
        self.kind = kind
        self.detail = detail
        self.run_id = run_id


class GatewayClient:
    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        headers = {}
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        self._http = httpx.Client(base_url=settings.url, headers=headers, timeout=settings.timeout_s)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ApiError(
                0,
                "server_unreachable",
                f"cannot reach the gateway at {self.settings.url} ({exc.__class__.__name__}: {exc}); "
                "is `gw serve` running? Set GW_URL or url in ~/.config/gw/config.toml",
            ) from exc
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {"error": "http_error", "detail": response.text[:500]}
            raise ApiError(
                response.status_code, body.get("error", "http_error"), body.get("detail"), body.get("run_id")
            )
        return response.json()

    def submit(self, spec: dict) -> dict:
        return self._call("POST", "/runs", json=spec)

    def runs(self, **filters: Any) -> dict:
        return self._call("GET", "/runs", params={k: v for k, v in filters.items() if v is not None})

    def run(self, run_id: str) -> dict:
        return self._call("GET", f"/runs/{run_id}")

    def rerun(self, run_id: str, body: dict) -> dict:
        return self._call("POST", f"/runs/{run_id}/rerun", json=body)

    def cancel(self, run_id: str) -> dict:
        return self._call("POST", f"/runs/{run_id}/cancel")

    def logs(self, run_id: str, **params: Any) -> dict:
        return self._call(
            "GET", f"/runs/{run_id}/logs", params={k: v for k, v in params.items() if v is not None}
        )

    def run_outputs(self, run_id: str) -> dict:
        return self._call("GET", f"/runs/{run_id}/outputs")

    def compare(self, run_a: str, run_b: str) -> dict:
        return self._call("GET", f"/runs/{run_a}/compare/{run_b}")

    def register_version(self, project: str, name: str, body: dict) -> dict:
        return self._call("POST", f"/datasets/{project}/{name}/versions", json=body)

    def datasets(self, project: str | None = None) -> list:
        return self._call("GET", "/datasets", params={"project": project} if project else None)

    def dataset(self, project: str, name: str) -> dict:
        return self._call("GET", f"/datasets/{project}/{name}")

    def dataset_versions(self, project: str, name: str) -> list:
        return self._call("GET", f"/datasets/{project}/{name}/versions")

    def dataset_version(self, project: str, name: str, version: str, *, files: bool = False) -> dict:
        params = {"files": "true"} if files else None
        return self._call("GET", f"/datasets/{project}/{name}/versions/{version}", params=params)

    def dataset_diff(self, project: str, name: str, a: str, b: str) -> dict:
        return self._call("GET", f"/datasets/{project}/{name}/diff", params={"a": a, "b": b})

    def share_dataset(self, project: str, name: str, other: str, *, on: bool) -> dict:
        return self._call("PUT" if on else "DELETE", f"/datasets/{project}/{name}/shares/{other}")

    def trace_artifact(self, sha256: str) -> dict:
        return self._call("GET", f"/lineage/artifacts/{sha256}")

    def trace_run(self, run_id: str) -> dict:
        return self._call("GET", f"/lineage/runs/{run_id}")

    def trace_dataset(self, project: str, name: str, version: str) -> dict:
        return self._call("GET", f"/lineage/datasets/{project}/{name}/{version}")

    def projects(self) -> list:
        return self._call("GET", "/projects")

    def project(self, name: str) -> dict:
        return self._call("GET", f"/projects/{name}")

    def usage(self, project: str) -> dict:
        return self._call("GET", f"/projects/{project}/usage")

    def queue(self) -> dict:
        return self._call("GET", "/queue")

    def audit(self, **params: Any) -> dict:
        return self._call("GET", "/audit", params={k: v for k, v in params.items() if v is not None})

    def audit_verify(self) -> dict:
        return self._call("GET", "/audit/verify")

    def tokens(self, user: str | None = None) -> list:
        return self._call("GET", "/tokens", params={"user": user} if user else None)

    def issue_token(self, **body: Any) -> dict:
        return self._call("POST", "/tokens", json=body)

    def revoke_token(self, token_id: int) -> dict:
        return self._call("DELETE", f"/tokens/{token_id}")

    def apply_site(self, config: dict, *, dry_run: bool, sync_slurm: bool) -> dict:
        params = {"dry_run": dry_run, "sync_slurm": sync_slurm}
        return self._call("POST", "/admin/site", json=config, params=params)

    def export_site(self) -> dict:
        return self._call("GET", "/admin/site")

    def sync_slurm(self, *, dry_run: bool) -> dict:
        return self._call("POST", "/admin/sync-slurm", params={"dry_run": dry_run})

    def health(self) -> dict:
        try:
            return self._call("GET", "/healthz")
        except ApiError as exc:
            if exc.status == 503:
                return {"status": "degraded", "detail": exc.detail}
            raise
