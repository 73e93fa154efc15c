"""Lineage of evaluations: what an eval result rests on, and what was evaluated of an artifact.

- ``trace_result(id)``: the result (harness and version, seeds, per-task
  values and counts, its source files), the suite version it was scored on
  (content hash, prompt template hash, its datasets with their digests), the
  eval run and its gateway run (Slurm jobs, script, inputs), the artifact
  and the run that wrote it (its params, data, code), the reviews and the
  gate decisions.
- ``artifact_evals(sha256)``: every eval run on an artifact with that
  content, with their results, the gate decisions those results took part
  in, and the reviews of the artifact.

JSON-ready, and only what the caller may read: a run of a project the
caller is not in is left out, uncounted (a non-member learns nothing of it).
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from typing import Any

from gateway.core.access.policy import allowed, visible_projects
from gateway.core.access.values import Principal
from gateway.core.eval.domain import EvalResultRecord, EvalRun, GateRecord, Review, SuiteVersionRecord
from gateway.errors import NotFound
from gateway.services.eval.gates import GateService
from gateway.services.lineage.walk import LineageService
from gateway.store.eval.evals import EvalStore
from gateway.store.eval.reviews import ReviewStore
from gateway.store.runs.runs import RunStore


class EvalTraceService:
    def __init__(
        self,
        store: EvalStore,
        gates: GateService,
        reviews: ReviewStore,
        lineage: LineageService,
        runs: RunStore,
    ) -> None:
        self.store = store
        self.gates = gates
        self.reviews = reviews
        self.lineage = lineage
        self.runs = runs

    def trace_result(self, result_id: str, *, principal: Principal) -> dict[str, Any]:
        """A result traced back: suite version, datasets with digests, prompt hash, harness, Slurm job,
        artifact and its training run (``run`` null when the caller may not read it)."""
        view = self.gates.show(result_id, principal=principal)
        result, eval_run = view.result, view.eval_run
        version = self.store.version_by_id(result.suite_version_id)
        training = None
        if eval_run.artifact_run_id:
            with contextlib.suppress(NotFound):  # another project's run: left out
                training = self.lineage.trace_run(eval_run.artifact_run_id, principal=principal)
        return {
            "result": result_dict(result),
            "suite_version": version_dict(version),
            "eval_run": eval_run_dict(eval_run),
            "run": None
            if eval_run.run_id is None  # imported: no gateway run made it
            else self.lineage.trace_run(eval_run.run_id, principal=principal),
            "artifact": {
                "sha256": eval_run.artifact_sha256,
                "path": eval_run.artifact_path,
                "run_id": eval_run.artifact_run_id,
                "run": training,
            },
            "reviews": [review_dict(r) for r in view.reviews],
            "approving_reviews": [r.id for r in view.approving],
            "gates": [gate_dict(g) for g in view.gates],
        }

    def artifact_evals(self, sha256: str, *, principal: Principal) -> dict[str, Any]:
        """The eval runs, results and gate decisions of an artifact the caller may read (NotFound when
        they may read none of it)."""
        sha = sha256.lower()
        found = self.store.eval_runs(visible_projects(principal), artifact_sha256=sha)
        if not found and not self._readable_artifact(sha, principal):
            raise NotFound(f"no artifact with sha256 {sha} that you may read")
        results = {}
        for eval_run in found:
            if eval_run.result_id is not None:
                results[eval_run.result_id] = self.gates.result(eval_run.result_id, principal=principal)
        gates = self.reviews.gates_of(list(results))
        # reviews of the artifact and of each of its results: a gate counts both kinds, so evidence
        # that lists the gate lists the reviews it counted
        reviews = [
            r
            for r in self.reviews.reviews("artifact", [sha])
            + self.reviews.reviews("eval_result", list(results))
            if allowed(principal, "eval.read", r.project)
        ]
        return {
            "sha256": sha,
            "eval_runs": [
                eval_run_dict(e)
                | {
                    "result": result_dict(results[e.result_id]) if e.result_id in results else None,
                    "environment_record": self._environment_record(e.run_id),
                }
                for e in found
            ],
            "gates": [gate_dict(g) for g in gates],
            "reviews": [review_dict(r) for r in reviews],
        }

    def _environment_record(self, run_id: str | None) -> dict[str, Any] | None:
        """The environment its eval job ran in (version, packages, what the job found, advisories)."""
        if run_id is None or self.lineage.environments is None:
            return None
        return self.lineage.environments(self.runs.get_run(run_id))

    def _readable_artifact(self, sha: str, principal: Principal) -> bool:
        return any(
            allowed(principal, "run.read", self.runs.get_run(a.run_id).project)
            for a in self.lineage.store.artifacts_by_sha256(sha)
        )


# -- records as JSON ----------------------------------------------------------------------------


def version_dict(v: SuiteVersionRecord) -> dict[str, Any]:
    """A suite version as the API shows it (JSON-ready)."""
    suite = v.suite
    return {
        "id": v.id,
        "ref": v.ref,
        "project": v.project,
        "name": v.name,
        "version": v.number,
        "content_hash": v.content_hash,
        "prompt_sha256": suite.prompt_sha256,
        "harness": {
            "name": suite.harness.name,
            "version": suite.harness.version,
            "model": suite.harness.model,
        },
        "tasks": [t.name for t in suite.tasks],
        "datasets": [
            {"ref": d.ref, "version": d.exact, "version_id": d.version_id, "digest": d.digest}
            for d in v.datasets
        ],
        "reviews_required": suite.gate.reviews_required,
        "environment": suite.environment,
        "registered_by": v.registered_by,
        "registered_at": v.registered_at.isoformat(),
    }


def eval_run_dict(e: EvalRun) -> dict[str, Any]:
    """An eval run as the API shows it (JSON-ready, times in ISO 8601)."""
    fields = asdict(e)
    fields["created_at"] = e.created_at.isoformat()
    fields["ended_at"] = e.ended_at.isoformat() if e.ended_at else None
    return fields


def result_dict(r: EvalResultRecord) -> dict[str, Any]:
    """A result without its per-sample scores: harness, seeds, per task its counts and values."""
    res = r.results
    return {
        "id": r.id,
        "eval_run_id": r.eval_run_id,
        "run_id": r.run_id,
        "project": r.project,
        "suite_version_id": r.suite_version_id,
        "suite_version": r.suite_ref,
        "suite_hash": r.suite_hash,
        "artifact_sha256": r.artifact_sha256,
        "created_at": r.created_at.isoformat(),
        "origin": r.origin,
        "imported_by": r.imported_by,
        "harness": res.harness,
        "harness_version": res.harness_version,
        "seeds": dict(res.seeds),
        "tasks": [
            {
                "name": t.name,
                "version": t.version,
                "n_shot": t.n_shot,
                "task_hash": t.task_hash,
                "n_original": t.n_original,
                "n_effective": t.n_effective,
                "samples": r.sample_counts.get(t.name, 0),
                "metrics": {m: {"value": v.value, "stderr": v.stderr} for m, v in t.metrics.items()},
            }
            for t in res.tasks.values()
        ],
        "files": [asdict(f) for f in r.files],
    }


def gate_dict(g: GateRecord) -> dict[str, Any]:
    """A gate decision as the API shows it (JSON-ready)."""
    fields = asdict(g)
    fields["decided_at"] = g.decided_at.isoformat()
    fields["review_ids"] = list(g.review_ids)
    return fields


def review_dict(r: Review) -> dict[str, Any]:
    """A review as the API shows it (JSON-ready)."""
    return {
        "id": r.id,
        "project": r.project,
        "target_type": r.target_type,
        "target_id": r.target_id,
        "verdict": r.verdict,
        "notes": r.notes,
        "samples": [{"task": s.task, "id": s.id} for s in r.samples],
        "labels": dict(r.labels),
        "reviewer": r.reviewer,
        "created_at": r.created_at.isoformat(),
        "supersedes": r.supersedes,
        "superseded_by": r.superseded_by,
        "current": r.current,
    }
