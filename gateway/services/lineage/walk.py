"""Walking the lineage spine both ways, and comparing runs.

- ``trace_artifact(sha256)``: from a file's content to every run and attempt
  that wrote it, with the run's Slurm jobs, rendered script, code, environment,
  params and dataset versions (and their parents); also the dataset versions
  that hold a file with that content.
- ``trace_run(run_id)``: the same record for one run.
- ``trace_dataset(version)``: from a dataset version to its parents, the
  versions made from it, every run that read it and every artifact those
  runs wrote.

Everything returned is JSON-ready, and only what the caller may read: runs
of other projects are left out, and not counted: a non-member learns nothing of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.core.lineage.compare import compare_runs
from gateway.core.lineage.values import Artifact, DatasetVersion
from gateway.core.runs.values import Run
from gateway.errors import NotFound
from gateway.services.lineage.datasets import DatasetService
from gateway.store.accounting.telemetry import TelemetryStore
from gateway.store.lineage.lineage import LineageStore
from gateway.store.runs.runs import RunStore


class LineageService:
    def __init__(
        self,
        store: LineageStore,
        datasets: DatasetService,
        runs: RunStore,
        telemetry: TelemetryStore | None = None,
        environments: Callable[[Run], dict[str, Any] | None] | None = None,
    ) -> None:
        # a run's environment record: its version, packages, what its jobs found, advisories (services.envs)
        self.environments = environments
        self.store = store
        self.datasets = datasets
        self.runs = runs
        self.telemetry = telemetry  # each attempt's GPU use in its record (docs/telemetry.md)

    # -- one run ----------------------------------------------------------------------------

    def _run(self, run_id: str, principal: Principal) -> Run:
        run = self.runs.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        return run

    def _gpu_use(self, run_id: str) -> dict[int, dict[str, Any]]:
        """Per attempt number, its GPU telemetry in brief (none harvested: not in the map)."""
        if self.telemetry is None:
            return {}
        return {
            stored.attempt: {
                "status": stored.telemetry.status,
                "gpus_sampled": sum(1 for g in stored.telemetry.gpus if g.samples),
                "allocated_gpu_hours": stored.telemetry.allocated_gpu_hours,
                "idle_gpu_hours": stored.telemetry.idle_gpu_hours,
                "idle_fraction": stored.telemetry.idle_fraction,
                "energy_wh": stored.telemetry.energy_wh,
            }
            for stored in self.telemetry.for_run(run_id)
        }

    def outputs(self, run_id: str, *, principal: Principal) -> dict[str, Any]:
        """The run's artifacts and metrics (summary and per-step series)."""
        run = self._run(run_id, principal)
        summary, series = self.store.metrics(run.id)
        return {
            "run_id": run.id,
            "artifacts": [artifact_dict(a, run) for a in self.store.artifacts(run.id)],
            "metrics": summary,
            "series": {k: [[s, v] for s, v in points] for k, points in series.items()},
            "harvests": [
                {"attempt": number, "at": at.isoformat() if at else None, "note": note}
                for number, at, note in self.store.harvests(run.id)
            ],
        }

    def trace_run(self, run_id: str, *, principal: Principal) -> dict[str, Any]:
        """A run's lineage record: its script and template, the spec's and script's digests, code,
        environment, params, dataset inputs (with their parent versions), attempts, artifacts and
        metrics. NotFound when there is no such run or the caller may not read it.
        """
        return self._run_record(self._run(run_id, principal))

    def _run_record(self, run: Run) -> dict[str, Any]:
        summary, _ = self.store.metrics(run.id)
        inputs = self.store.inputs(run.id)
        gpu = self._gpu_use(run.id)
        return {
            "id": run.id,
            "name": run.name,
            "project": run.project,
            "queue": run.queue,
            "submitter": run.submitter,
            "state": run.state.value,
            "created_at": run.created_at.isoformat(),
            "parent_run_id": run.parent_run_id,
            "spec_sha256": run.spec_sha256,
            "script_sha256": run.script_sha256,
            "template": {"name": run.template_name, "version": run.template_version},
            "script": run.script,
            "params": run.spec.params,
            "code": run.code,
            "environment": run.environment,
            "environment_record": self.environments(run) if self.environments else None,
            "datasets": [
                {
                    "ref": i.ref,
                    "path": i.path,
                    "verify": i.verify,
                    "env_var": i.env_var,
                    "version": version_dict(i.version),
                    "parents": [version_dict(p) for p in self.datasets.parents(i.version)],
                }
                for i in inputs
            ]
            + [
                {"ref": p, "path": p, "verify": "exists", "env_var": None, "version": None, "parents": []}
                for p in run.spec.dataset_paths()
            ],
            "attempts": [
                {
                    "number": a.number,
                    "job_id": a.job_id,
                    "state": a.state.value,
                    "node_list": a.node_list,
                    "start_time": a.start_time.isoformat() if a.start_time else None,
                    "end_time": a.end_time.isoformat() if a.end_time else None,
                    "exit_code": a.exit_code,
                    "failure_class": (a.failure or {}).get("class"),
                    "gpu": gpu.get(a.number),
                }
                for a in run.attempts
            ],
            "artifacts": [artifact_dict(a, run) for a in self.store.artifacts(run.id)],
            "metrics": summary,
        }

    # -- from a file ------------------------------------------------------------------------

    def trace_artifact(self, sha256: str, *, principal: Principal) -> dict[str, Any]:
        """Every visible artifact with this content, each with its run; and dataset files with it."""
        sha = sha256.lower()
        found = []
        runs: dict[str, Run] = {}
        for artifact in self.store.artifacts_by_sha256(sha):
            run = runs.get(artifact.run_id) or self.runs.get_run(artifact.run_id)
            runs[run.id] = run
            if not allowed(principal, "run.read", run.project):
                continue
            found.append({"artifact": artifact_dict(artifact, run), "run": self._run_record(run)})
        data_files = []
        for version, path in self.datasets.store.versions_with_file(sha):
            dataset = self.datasets.store.dataset(version.project, version.name)
            if self.datasets.readable(dataset, principal):
                data_files.append({"path": path, "version": version_dict(version)})
        if not found and not data_files:
            raise NotFound(f"no artifact or dataset file with sha256 {sha} that you may read")
        return {"sha256": sha, "artifacts": found, "dataset_files": data_files}

    # -- from a dataset version ---------------------------------------------------------------

    def trace_dataset(
        self, project: str, name: str, selector: str, *, principal: Principal
    ) -> dict[str, Any]:
        """A version of ``project/name`` (``selector`` as ``DatasetService.version``): its parents and
        children, and the runs that read it with their artifacts. Runs the caller may not read are left
        out, uncounted. SpecError or NotFound as ``DatasetService.version``.
        """
        version = self.datasets.version(project, name, selector, principal=principal)
        used = []
        for run_id, run_project in self.store.runs_using(version.id):
            if not allowed(principal, "run.read", run_project):
                continue
            run = self.runs.get_run(run_id)
            used.append(
                {
                    "id": run.id,
                    "name": run.name,
                    "project": run.project,
                    "state": run.state.value,
                    "submitter": run.submitter,
                    "created_at": run.created_at.isoformat(),
                    "artifacts": [artifact_dict(a, run) for a in self.store.artifacts(run.id)],
                }
            )
        return {
            "version": version_dict(version),
            "parents": [version_dict(p) for p in self.datasets.parents(version)],
            "children": [version_dict(c) for c in self.datasets.store.children(version.id)],
            "runs": used,
        }

    # -- comparing ----------------------------------------------------------------------------

    def compare(self, a: str, b: str, *, principal: Principal) -> dict[str, Any]:
        """Params diff, dataset versions diff and metrics side by side of two runs."""
        return compare_runs(self._compare_input(a, principal), self._compare_input(b, principal))

    def _compare_input(self, run_id: str, principal: Principal) -> dict[str, Any]:
        run = self._run(run_id, principal)
        summary, _ = self.store.metrics(run.id)
        return {
            "id": run.id,
            "name": run.name,
            "params": run.spec.params,
            "datasets": [
                {
                    "name": i.version.name,
                    "project": i.version.project,
                    "version": i.version.number,
                    "digest": i.version.digest,
                }
                for i in self.store.inputs(run.id)
            ],
            "metrics": summary,
            "code": run.code,
            "environment": run.environment,
        }


def version_dict(v: DatasetVersion) -> dict[str, Any]:
    """A version as the API shows it: ``dataset`` (project/name) and ``version`` (its number) added."""
    fields = asdict(v)
    del fields["dataset_id"]
    fields["version"] = fields.pop("number")
    fields["registered_at"] = v.registered_at.isoformat()
    return {"dataset": f"{v.project}/{v.name}", **fields}


def artifact_dict(a: Artifact, run: Run) -> dict[str, Any]:
    """An artifact as the API shows it: with its attempt's Slurm job id and its absolute path in
    ``run``'s directory (``size`` in bytes).
    """
    attempt = next((x for x in run.attempts if x.id == a.attempt_id), None)
    return {
        "run_id": a.run_id,
        "attempt": a.attempt_number,
        "job_id": attempt.job_id if attempt else None,
        "path": a.path,
        "abs_path": f"{run.run_dir}/{a.path}",
        "size": a.size_bytes,
        "sha256": a.sha256,
        "created_at": a.created_at.isoformat(),
    }
