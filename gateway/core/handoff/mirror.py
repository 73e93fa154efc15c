"""What the gateway writes to an MLflow registry and tracking server, and how it reads drift there.

Pure values: the registered model's name for a gateway model, the tags that
tie an MLflow model version to the gateway's records (run, Slurm jobs, data
versions and digests, evaluations and gate decisions, approvals, the
evidence bundle), the params, metrics and tags of a run in MLflow tracking,
and ``drift``: how what MLflow says differs from what the gateway recorded.
The gateway is the source of truth: drift is reported, never copied back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TAG_PREFIX = "gateway."
TAG_VALUE_MAX = 5000  # MLflow's limit on a model version tag's value
PARAM_VALUE_MAX = 6000  # MLflow's limit on a param's value (MLflow >= 2.x)
SHA_TAG = "gateway.artifact_sha256"
RELEASE_TAG = "gateway.release_id"
RUN_TAG = "gateway.run_id"


def registered_model_name(project: str, model: str) -> str:
    """The MLflow registered model of gateway model ``project/model``: ``project.model`` (MLflow
    names may not hold a slash in every store; the gateway's names have no dot)."""
    return f"{project}.{model}"


def experiment_name(project: str) -> str:
    """The MLflow experiment a project's runs are logged to."""
    return f"gateway/{project}"


def _clip(value: str, limit: int = TAG_VALUE_MAX) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _json(value: Any) -> str:
    return _clip(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str))


@dataclass(frozen=True)
class ReleaseLinks:
    """Where a person reads the gateway's side (empty when the gateway's public URL is not set)."""

    release_page: str = ""
    evidence: str = ""
    run_page: str = ""


def release_tags(
    *,
    release_id: str,
    ref: str,
    sha256: str,
    snapshot: Mapping[str, Any],
    links: ReleaseLinks,
    approvals: Sequence[str] = (),
    gate: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The tags of a release's MLflow model version: the gateway's ids and digests, from the release's
    evidence snapshot (its run, Slurm jobs, data versions, evaluations) and the newest move's approvals
    and gate decision. Every value is text of at most ``TAG_VALUE_MAX`` characters."""
    run = snapshot.get("run") or {}
    evaluations = snapshot.get("evaluations") or {}
    datasets = [
        f"{d['version']['dataset']}@{d['version']['version']}:{d['version']['digest']}"
        for d in run.get("datasets") or []
        if d.get("version")
    ]
    jobs = [str(a["job_id"]) for a in run.get("attempts") or [] if a.get("job_id")]
    results = [
        {"id": e["result"]["id"], "suite": e["result"].get("suite_version")}
        for e in evaluations.get("eval_runs") or []
        if e.get("result")
    ]
    gates = [{"id": g.get("id"), "verdict": g.get("verdict")} for g in evaluations.get("gates") or []]
    tags = {
        RELEASE_TAG: release_id,
        "gateway.release": ref,
        SHA_TAG: sha256,
        RUN_TAG: str(run.get("id", "")),
        "gateway.slurm_job_ids": ",".join(jobs),
        "gateway.datasets": _json(datasets),
        "gateway.code": _json(run.get("code")),
        "gateway.eval_results": _json(results),
        "gateway.gates": _json(gates),
        "gateway.approvals": ",".join(approvals),
        "gateway.gate_decision": _json(dict(gate)) if gate else "",
        "gateway.release_page": links.release_page,
        "gateway.evidence": links.evidence,
    }
    return {k: _clip(v) for k, v in tags.items()}


def run_params(params: Mapping[str, Any]) -> dict[str, str]:
    """A run's params as MLflow params: nested values flattened with dots, each value as text."""
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping) and value:
            for key in sorted(value):
                walk(f"{prefix}.{key}" if prefix else str(key), value[key])
        else:
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            flat[prefix] = _clip(text, PARAM_VALUE_MAX)

    walk("", dict(params))
    return flat


@dataclass(frozen=True)
class MetricPoint:
    key: str
    value: float
    step: int
    timestamp_ms: int


def run_metrics(
    summary: Mapping[str, float], series: Mapping[str, Sequence[tuple[int | None, float]]], *, ended_ms: int
) -> list[MetricPoint]:
    """A run's metrics as MLflow points: each series point at its step, each summary value at step 0
    unless the metric also has a series; all stamped with the run's end (a re-sync gives equal points)."""
    points = [
        MetricPoint(key, float(value), int(step if step is not None else 0), ended_ms)
        for key, values in sorted(series.items())
        for step, value in values
    ]
    points += [
        MetricPoint(key, float(value), 0, ended_ms)
        for key, value in sorted(summary.items())
        if key not in series
    ]
    return points


@dataclass(frozen=True)
class ObservedVersion:
    """A model version as MLflow reports it."""

    version: str
    tags: Mapping[str, str] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True)
class ObservedModel:
    """A registered model as MLflow reports it: its aliases (alias -> version) and versions."""

    name: str
    aliases: Mapping[str, str]
    versions: Sequence[ObservedVersion]


def drift(
    observed: ObservedModel | None,
    *,
    expected_aliases: Mapping[str, str | None],
    expected_versions: Mapping[str, str],
) -> list[str]:
    """How MLflow differs from the gateway's records, one sentence each (empty: in step).

    ``expected_aliases``: alias -> the gateway release id it points at (None: unset) for the aliases the
    gateway mirrors; ``expected_versions``: gateway release id -> the MLflow version it was mirrored as.
    A version's ``gateway.release_id`` tag removed or changed, an alias moved, set or removed in MLflow,
    a mirrored version deleted: each is drift. Aliases the gateway does not mirror are left alone.
    """
    if observed is None:
        mirrored = len(expected_versions)
        return (
            [f"the registered model is missing in MLflow ({mirrored} versions mirrored)"] if mirrored else []
        )
    problems = []
    by_version = {v.version: v for v in observed.versions}
    release_of = {v: r for r, v in expected_versions.items()}
    for release_id, version in sorted(expected_versions.items(), key=lambda kv: int(kv[1])):
        found = by_version.get(version)
        if found is None:
            problems.append(f"version {version} (release {release_id}) was deleted in MLflow")
        elif found.tags.get(RELEASE_TAG) != release_id:
            problems.append(
                f"version {version}'s tag {RELEASE_TAG} is {found.tags.get(RELEASE_TAG)!r} in MLflow, "
                f"the gateway mirrored it as {release_id!r}"
            )
    for alias, target in sorted(expected_aliases.items()):
        want = expected_versions.get(target) if target else None
        have = observed.aliases.get(alias)
        if have != want:
            where = f"version {have}" if have else "nothing"
            should = f"version {want} (release {target})" if want else "nothing"
            origin = f" (release {release_of[have]})" if have in release_of else ""
            problems.append(f"alias {alias} points at {where}{origin} in MLflow; the gateway says {should}")
    return problems
