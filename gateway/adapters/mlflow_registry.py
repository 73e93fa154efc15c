"""MLflow's registry and tracking server through MLflow's own client (``MlflowClient``): the one module
that imports mlflow (the optional extra ``gateway[mlflow]``; the contract ``mlflow-one-module``).

MLflow's HTTP client retries a failed request itself, with back-off, for
minutes; the gateway's outbox already retries, so this adapter turns those
retries off and bounds each request by ``timeout_s`` (MLflow reads both from
the environment at each request: ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``,
``MLFLOW_HTTP_REQUEST_TIMEOUT``). Every failure, refused or unanswered,
becomes ``HandoffError``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from gateway.core.handoff.mirror import RELEASE_TAG, RUN_TAG, MetricPoint, ObservedModel, ObservedVersion
from gateway.errors import HandoffError

BATCH_METRICS = 1000  # MLflow's log_batch limits
BATCH_PARAMS = 100


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")


class MlflowRegistry:
    def __init__(self, tracking_uri: str, *, timeout_s: float = 10.0) -> None:
        os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
        os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, int(timeout_s)))
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        from mlflow import MlflowClient

        self.base_url = tracking_uri.rstrip("/")
        self.client = MlflowClient(tracking_uri=self.base_url, registry_uri=self.base_url)
        # What this process has seen exist (each saves a request per job); forgotten on any failure,
        # in case it was deleted in MLflow meanwhile.
        self._models: set[str] = set()
        self._experiments: dict[str, str] = {}
        self._artifact_uris: dict[str, str] = {}

    @contextmanager
    def _call(self, what: str) -> Iterator[None]:
        try:
            yield
        except HandoffError:
            raise
        except Exception as exc:  # MlflowException, requests' and the OS's errors alike: the seam's edge
            self._models.clear()
            self._experiments.clear()
            self._artifact_uris.clear()
            first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
            raise HandoffError(f"MLflow at {self.base_url}: {what} failed: {first}") from exc

    # -- registry ---------------------------------------------------------------------------------

    def ensure_model(self, name: str, *, description: str, tags: Mapping[str, str]) -> None:
        """The registered model ``name`` exists (created with ``tags`` when it did not)."""
        from mlflow.exceptions import MlflowException

        if name in self._models:
            return
        with self._call(f"registering model {name}"):
            try:
                self.client.get_registered_model(name)
                self._models.add(name)
                return
            except MlflowException as exc:
                if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                    raise
            try:
                self.client.create_registered_model(name, tags=dict(tags), description=description)
            except MlflowException as exc:
                if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
            self._models.add(name)

    def version_of(self, name: str, release_id: str) -> ObservedVersion | None:
        """The version of ``name`` tagged with this gateway release id, if any (the oldest)."""
        with self._call(f"looking up release {release_id} in {name}"):
            found = self.client.search_model_versions(
                f"name='{_quoted(name)}' and tag.`{RELEASE_TAG}`='{_quoted(release_id)}'"
            )
        if not found:
            return None
        version = min(found, key=lambda v: int(v.version))
        return ObservedVersion(str(version.version), dict(version.tags or {}), version.source or "")

    def create_version(
        self, name: str, *, source: str, run_id: str | None, tags: Mapping[str, str]
    ) -> ObservedVersion:
        """A new version of ``name`` from ``source``, tagged."""
        with self._call(f"creating a version of {name}"):
            version = self.client.create_model_version(name, source=source, run_id=run_id, tags=dict(tags))
        return ObservedVersion(str(version.version), dict(version.tags or {}), version.source or "")

    def set_version_tags(self, name: str, version: str, tags: Mapping[str, str]) -> None:
        """Set these tags on a version."""
        with self._call(f"tagging {name} version {version}"):
            for key, value in tags.items():
                self.client.set_model_version_tag(name, version, key, value)

    def set_alias(self, name: str, alias: str, version: str) -> None:
        """Point ``alias`` of ``name`` at ``version``."""
        with self._call(f"setting alias {alias} of {name}"):
            self.client.set_registered_model_alias(name, alias, version)

    def delete_alias(self, name: str, alias: str) -> None:
        """Remove ``alias`` of ``name`` (no error when it is not set)."""
        from mlflow.exceptions import MlflowException

        with self._call(f"removing alias {alias} of {name}"):
            try:
                self.client.delete_registered_model_alias(name, alias)
            except MlflowException as exc:
                if exc.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
                    raise

    def observe(self, name: str) -> ObservedModel | None:
        """The registered model now: aliases and versions with their tags; None when missing."""
        from mlflow.exceptions import MlflowException

        with self._call(f"reading model {name}"):
            try:
                model = self.client.get_registered_model(name)
            except MlflowException as exc:
                if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
                    return None
                raise
            versions = self.client.search_model_versions(f"name='{_quoted(name)}'")
        return ObservedModel(
            name=name,
            aliases={str(k): str(v) for k, v in (model.aliases or {}).items()},
            versions=[ObservedVersion(str(v.version), dict(v.tags or {}), v.source or "") for v in versions],
        )

    # -- tracking ---------------------------------------------------------------------------------

    def experiment(self, name: str) -> str:
        """The id of experiment ``name`` (created when missing)."""
        from mlflow.exceptions import MlflowException

        if name in self._experiments:
            return self._experiments[name]
        with self._call(f"finding experiment {name}"):
            found = self.client.get_experiment_by_name(name)
            if found is not None:
                self._experiments[name] = str(found.experiment_id)
                return self._experiments[name]
            try:
                self._experiments[name] = str(
                    self.client.create_experiment(name, tags={"gateway.experiment": name})
                )
                return self._experiments[name]
            except MlflowException as exc:
                if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
                again = self.client.get_experiment_by_name(name)
                if again is None:
                    raise
                return str(again.experiment_id)

    def tracking_run(self, experiment_id: str, *, key: str, run_name: str, start_ms: int) -> str:
        """The tracking run tagged ``gateway.run_id = key`` (created when missing)."""
        with self._call(f"finding the tracking run of {key}"):
            found = self.client.search_runs(
                [experiment_id], filter_string=f"tags.`{RUN_TAG}` = '{_quoted(key)}'", max_results=5
            )
            if found:
                first = min(found, key=lambda r: r.info.start_time or 0)
                self._artifact_uris[str(first.info.run_id)] = str(first.info.artifact_uri)
                return str(first.info.run_id)
            run = self.client.create_run(
                experiment_id, start_time=start_ms, tags={RUN_TAG: key}, run_name=run_name
            )
            self._artifact_uris[str(run.info.run_id)] = str(run.info.artifact_uri)
            return str(run.info.run_id)

    def log_run(
        self,
        run_id: str,
        *,
        params: Mapping[str, str],
        metrics: Sequence[MetricPoint],
        tags: Mapping[str, str],
        artifacts_json: str,
        status: str,
        end_ms: int,
    ) -> dict[str, int]:
        """Log what the run lacks, the artifact list, then end it (see the protocol)."""
        from mlflow.entities import Metric, Param, RunTag

        with self._call(f"logging tracking run {run_id}"):
            run = self.client.get_run(run_id)
            have_params, have_tags = dict(run.data.params), dict(run.data.tags)
            new_params = [Param(k, v) for k, v in params.items() if k not in have_params]
            new_tags = [RunTag(k, v) for k, v in tags.items() if have_tags.get(k) != v]
            seen: dict[str, set[tuple[int, float, int]]] = {}
            for key in {m.key for m in metrics}:
                seen[key] = {
                    (int(h.step), float(h.value), int(h.timestamp))
                    for h in self.client.get_metric_history(run_id, key)
                }
            new_points = [
                Metric(m.key, m.value, m.timestamp_ms, m.step)
                for m in metrics
                if (m.step, m.value, m.timestamp_ms) not in seen[m.key]
            ]
            for i in range(0, len(new_params), BATCH_PARAMS):
                self.client.log_batch(run_id, params=new_params[i : i + BATCH_PARAMS])
            for i in range(0, len(new_points), BATCH_METRICS):
                self.client.log_batch(run_id, metrics=new_points[i : i + BATCH_METRICS])
            if new_tags:
                self.client.log_batch(run_id, tags=new_tags)
            self.client.log_text(run_id, artifacts_json, "gateway/artifacts.json")
            if run.info.status != status or run.info.end_time != end_ms:
                self.client.set_terminated(run_id, status=status, end_time=end_ms)
        return {"params": len(new_params), "metrics": len(new_points), "tags": len(new_tags)}

    def upload(self, run_id: str, path: Path, *, sha256: str, artifact_path: str) -> str:
        """Upload ``path`` under ``artifact_path`` of a tracking run after checking its sha256."""
        digest = hashlib.sha256()
        try:
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise HandoffError(
                f"cannot read the artifact {path} to upload it to MLflow: {exc.strerror or exc}; the gateway "
                "needs read access to it, or set GATEWAY_MLFLOW_ARTIFACTS=reference"
            ) from exc
        if digest.hexdigest() != sha256:
            raise HandoffError(
                f"the file {path} has sha256 {digest.hexdigest()}, not the release's {sha256}: it changed "
                "since it was harvested; nothing was uploaded"
            )
        with self._call(f"uploading {path.name} to run {run_id}"):
            existing = {f.path for f in self.client.list_artifacts(run_id, artifact_path)}
            if f"{artifact_path}/{path.name}" not in existing:
                self.client.log_artifact(run_id, str(path), artifact_path=artifact_path)
            root = self._artifact_uris.get(run_id) or self.client.get_run(run_id).info.artifact_uri
            return f"{root}/{artifact_path}"

    def version_url(self, name: str, version: str) -> str:
        """The model version's page in the MLflow UI."""
        return f"{self.base_url}/#/models/{quote(name, safe='')}/versions/{quote(version, safe='')}"

    def run_url(self, experiment_id: str, run_id: str) -> str:
        """The tracking run's page in the MLflow UI."""
        return f"{self.base_url}/#/experiments/{quote(experiment_id, safe='')}/runs/{quote(run_id, safe='')}"
