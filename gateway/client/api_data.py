"""``GatewayClient``'s calls about data: dataset versions, environments and lineage."""

from __future__ import annotations

from gateway.client.api_base import ApiBase


class DataCalls(ApiBase):
    """``/datasets``, ``/environments`` and ``/lineage``: each method one request, its JSON answer."""

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

    # -- environments -----------------------------------------------------------------------------
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

    # -- lineage ----------------------------------------------------------------------------------
    def trace_artifact(self, sha256: str) -> dict:
        """``GET /lineage/artifacts/{sha256}``: the runs that wrote a file with that digest."""
        return self._call("GET", f"/lineage/artifacts/{sha256}")

    def trace_run(self, run_id: str) -> dict:
        """``GET /lineage/runs/{id}``: a run's inputs, code, environment and outputs."""
        return self._call("GET", f"/lineage/runs/{run_id}")

    def trace_dataset(self, project: str, name: str, version: str) -> dict:
        """``GET /lineage/datasets/{project}/{name}/{version}``: the runs that read the version."""
        return self._call("GET", f"/lineage/datasets/{project}/{name}/{version}")
