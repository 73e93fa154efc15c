"""The MLflow mirror's jobs: register a release's model version, set an alias, log a run to tracking.

Each job is idempotent: a version is found by its ``gateway.release_id``
tag before one is created, a tracking run by its ``gateway.run_id`` tag, a
param or metric point already logged is not logged again. An alias job sets
the alias where the gateway says it stands *now* (its newest move), so jobs
worked late or out of order after an outage still leave MLflow where the
gateway is. Each returns the result to keep with the item (versions, ids, links).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gateway.adapters.handoff import ModelRegistry
from gateway.core.handoff.mirror import (
    RUN_TAG,
    ReleaseLinks,
    experiment_name,
    registered_model_name,
    release_tags,
    run_metrics,
    run_params,
)
from gateway.core.releases.domain import AliasEvent, Release
from gateway.core.slurm.states import RunState
from gateway.errors import HandoffError
from gateway.services.handoff.config import HandoffConfig
from gateway.store.lineage.lineage import LineageStore
from gateway.store.releases.promotions import PromotionStore
from gateway.store.releases.releases import ReleaseStore
from gateway.store.runs.runs import RunStore

MLFLOW_STATUS = {RunState.SUCCEEDED: "FINISHED", RunState.CANCELLED: "KILLED"}  # others: FAILED


def links_of(config: HandoffConfig, release: Release) -> ReleaseLinks:
    """The gateway's pages for a release (empty without ``public_url``)."""
    if not config.public_url:
        return ReleaseLinks()
    base = config.public_url.rstrip("/")
    return ReleaseLinks(
        release_page=f"{base}/ui/models/{release.project}/{release.model}",
        evidence=f"{base}/evidence/releases/{release.project}/{release.model}/{release.version}",
        run_page=f"{base}/ui/runs/{release.run_id}",
    )


class MlflowJobs:
    def __init__(
        self,
        registry: ModelRegistry,
        config: HandoffConfig,
        releases: ReleaseStore,
        promotions: PromotionStore,
        runs: RunStore,
        lineage: LineageStore,
    ) -> None:
        self.registry = registry
        self.config = config
        self.releases = releases
        self.promotions = promotions
        self.runs = runs
        self.lineage = lineage

    def release(self, release_id: str, *, move: AliasEvent | None = None) -> dict[str, Any]:
        """Register (or find) the release's model version, tagged; returns version, ids and links."""
        release = self.releases.release_by_id(release_id)
        name = registered_model_name(release.project, release.model)
        self.registry.ensure_model(
            name,
            description=f"Mirrored from the gateway's model {release.project}/{release.model}",
            tags={"gateway.model": f"{release.project}/{release.model}"},
        )
        tags = release_tags(
            release_id=release.id,
            ref=release.ref,
            sha256=release.artifact_sha256,
            snapshot=release.snapshot,
            links=links_of(self.config, release),
            approvals=move.approvals if move else (),
            gate={"gate_id": move.gate_id, "override": move.override, "move": move.id, "alias": move.alias}
            if move
            else None,
        )
        if move is None:  # a release's own job does not blank what a move wrote
            tags = {k: v for k, v in tags.items() if k not in ("gateway.approvals", "gateway.gate_decision")}
        experiment_id = self.registry.experiment(experiment_name(release.project))
        run = self.runs.get_run(release.run_id)
        tracking = self.registry.tracking_run(
            experiment_id,
            key=run.id,
            run_name=f"{run.name} ({run.id})",
            start_ms=int(run.created_at.timestamp() * 1000),
        )
        found = self.registry.version_of(name, release.id)
        if found is None:
            source = self._source(release, tracking)
            found = self.registry.create_version(name, source=source, run_id=tracking, tags=tags)
        else:
            self.registry.set_version_tags(name, found.version, tags)
        return {
            "registered_model": name,
            "version": found.version,
            "version_url": self.registry.version_url(name, found.version),
            "experiment_id": experiment_id,
            "tracking_run": tracking,
            "run_url": self.registry.run_url(experiment_id, tracking),
            "source": found.source,
        }

    def _source(self, release: Release, tracking_run: str) -> str:
        if self.config.artifacts == "reference":
            return self.config.reference_uri.format(
                sha256=release.artifact_sha256,
                project=release.project,
                model=release.model,
                version=release.version,
                path=release.artifact_path,
            )
        run = self.runs.get_run(release.run_id)
        return self.registry.upload(
            tracking_run,
            Path(run.run_dir) / release.artifact_path,
            sha256=release.artifact_sha256,
            artifact_path=f"model-{release.artifact_sha256[:12]}",
        )

    def alias(self, event_id: str) -> dict[str, Any]:
        """Set the MLflow alias the move names, where the gateway says it stands now."""
        event = self.promotions.alias_event(event_id)
        newest = self.promotions.alias_events(event.model_id, event.alias)[-1]
        model = self.releases.model_by_id(event.model_id)
        name = registered_model_name(model.project, model.name)
        out: dict[str, Any] = {"registered_model": name, "alias": event.alias}
        if newest.id != event.id:
            out["superseded_by"] = newest.id  # that move's own job sets the alias
        if newest.to_release is None:
            self.registry.delete_alias(name, event.alias)
            return out | {"version": None}
        found = self.registry.version_of(name, newest.to_release)
        if found is None:  # its release's own job has not run yet: register it here, with the move's tags
            version = self.release(newest.to_release, move=newest)["version"]
        else:
            version = found.version
            self.registry.set_version_tags(name, version, self._move_tags(newest))
        self.registry.set_alias(name, event.alias, version)
        return out | {"version": version, "version_url": self.registry.version_url(name, version)}

    @staticmethod
    def _move_tags(move: AliasEvent) -> dict[str, str]:
        """The tags an alias move sets on the version it points at: approvals and the gate decision."""
        gate = {"gate_id": move.gate_id, "override": move.override, "move": move.id, "alias": move.alias}
        return {
            "gateway.approvals": ",".join(move.approvals),
            "gateway.gate_decision": json.dumps(gate, sort_keys=True, separators=(",", ":")),
        }

    def run(self, run_id: str) -> dict[str, Any]:
        """Log an ended run to its project's experiment (only what MLflow lacks); returns what was new."""
        run = self.runs.get_run(run_id)
        summary, series = self.lineage.metrics(run_id)
        ends = [a.end_time for a in run.attempts if a.end_time is not None]
        ended_ms = int((max(ends) if ends else run.updated_at).timestamp() * 1000)
        artifacts = [
            {"path": a.path, "size_bytes": a.size_bytes, "sha256": a.sha256, "attempt": a.attempt_number}
            for a in self.lineage.artifacts(run_id)
        ]
        jobs = [a.job_id for a in run.attempts if a.job_id]
        code = run.code or {}
        tags = {
            RUN_TAG: run.id,
            "gateway.project": run.project,
            "gateway.queue": run.queue,
            "gateway.submitter": run.submitter,
            "gateway.state": run.state.value,
            "gateway.slurm_job_ids": ",".join(jobs),
            "gateway.spec_sha256": run.spec_sha256,
            "gateway.script_sha256": run.script_sha256,
            "mlflow.source.git.commit": str(code.get("commit") or ""),
            "mlflow.user": run.submitter,
        }
        if self.config.public_url:
            tags["gateway.run_page"] = f"{self.config.public_url.rstrip('/')}/ui/runs/{run.id}"
        experiment_id = self.registry.experiment(experiment_name(run.project))
        tracking = self.registry.tracking_run(
            experiment_id,
            key=run.id,
            run_name=f"{run.name} ({run.id})",
            start_ms=int(run.created_at.timestamp() * 1000),
        )
        logged = self.registry.log_run(
            tracking,
            params=run_params(run.spec.params or {}),
            metrics=run_metrics(summary, series, ended_ms=ended_ms),
            tags={k: v for k, v in tags.items() if v},
            artifacts_json=json.dumps(artifacts, indent=1, sort_keys=True),
            status=MLFLOW_STATUS.get(run.state, "FAILED"),
            end_ms=ended_ms,
        )
        return {
            "experiment_id": experiment_id,
            "tracking_run": tracking,
            "run_url": self.registry.run_url(experiment_id, tracking),
            "logged": logged,
        }


def unavailable(exc: Exception) -> str:
    """The text kept for a failed try."""
    return str(exc) if isinstance(exc, HandoffError) else f"{type(exc).__name__}: {exc}"
