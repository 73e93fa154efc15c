"""The seams to the tools after training: an MLflow-like model registry and tracking server, and an
HTTP poster for webhooks. Services see these protocols; ``gateway.wiring`` picks the concrete ones
(``adapters/mlflow_registry.py``, the one module that imports mlflow; ``adapters/webhook_http.py``).

Every method raises ``HandoffError`` when the other side refuses or does not answer in time; the
outbox (``services/handoff``) records it and tries again later. Nothing here decides what to send.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from gateway.core.handoff.mirror import MetricPoint, ObservedModel, ObservedVersion


class ModelRegistry(Protocol):
    """A model registry with aliases and tags, and a tracking server with experiments and runs."""

    base_url: str  # where a person opens its UI

    def ensure_model(self, name: str, *, description: str, tags: Mapping[str, str]) -> None:
        """The registered model ``name`` exists (created with ``tags`` when it did not)."""
        ...

    def version_of(self, name: str, release_id: str) -> ObservedVersion | None:
        """The version of ``name`` tagged with this gateway release id, if any."""
        ...

    def create_version(
        self, name: str, *, source: str, run_id: str | None, tags: Mapping[str, str]
    ) -> ObservedVersion:
        """A new version of ``name`` from ``source`` (an artifact URI), tagged."""
        ...

    def set_version_tags(self, name: str, version: str, tags: Mapping[str, str]) -> None:
        """Set these tags on a version (others untouched)."""
        ...

    def set_alias(self, name: str, alias: str, version: str) -> None:
        """Point ``alias`` of ``name`` at ``version``."""
        ...

    def delete_alias(self, name: str, alias: str) -> None:
        """Remove ``alias`` of ``name`` (no error when it is not set)."""
        ...

    def observe(self, name: str) -> ObservedModel | None:
        """The registered model as the registry has it now (aliases, versions and their tags); None
        when there is none of that name."""
        ...

    def experiment(self, name: str) -> str:
        """The id of experiment ``name`` (created when missing)."""
        ...

    def tracking_run(self, experiment_id: str, *, key: str, run_name: str, start_ms: int) -> str:
        """The id of the tracking run tagged ``gateway.run_id = key`` in that experiment (created when
        missing, so a re-sync finds the same run)."""
        ...

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
        """Log what the run lacks of these params, metric points and tags (a point or param already
        there is not logged again), the artifact list as ``gateway/artifacts.json``, then end it with
        ``status`` (FINISHED, FAILED, KILLED). Returns how many params, points and tags were new."""
        ...

    def upload(self, run_id: str, path: Path, *, sha256: str, artifact_path: str) -> str:
        """Upload the file at ``path`` under ``artifact_path`` of a tracking run, after checking its
        content is ``sha256``; returns the artifact directory's URI (a model version source)."""
        ...

    def version_url(self, name: str, version: str) -> str:
        """Where a person sees a model version in the registry's UI."""
        ...

    def run_url(self, experiment_id: str, run_id: str) -> str:
        """Where a person sees a tracking run in the UI."""
        ...


class WebhookPoster(Protocol):
    """Posts one signed body to an endpoint; returns the HTTP status and the start of the answer."""

    def post(self, url: str, body: bytes, headers: Mapping[str, str], *, timeout_s: float) -> tuple[int, str]:
        """POST ``body`` with ``headers``; HandoffError when there is no HTTP answer in time."""
        ...
