"""What each job of a run found at its start, read back and compared with its environment's
recorded version: the file its pre-flight writes under the run directory (``record_file``), the
drift (``drift_of``) and that drift in words (``RunEnvironment.warnings``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gateway.adapters.runhost import RunHost
from gateway.core.envs.advisories import Finding
from gateway.core.envs.diff import is_empty, package_diff
from gateway.core.envs.record import EnvVersion
from gateway.core.runs.values import Run
from gateway.store.envs.envs import EnvStore, Observation

MAX_OBSERVED_BYTES = 1 << 20  # the most of a file a job writes beside its run (or its build) read back


@dataclass(frozen=True)
class RunEnvironment:
    """A run's environment: the version it named (pinned), and what each of its jobs found."""

    run_id: str
    record: dict[str, Any] | None  # the run's environment record (kind, ref, digest ...)
    version: EnvVersion | None
    observations: list[Observation]
    findings: list[Finding] = field(default_factory=list)  # the version's advisories (scan)
    build: str | None = None  # the version's build, in words, while it keeps this run from starting

    @property
    def warnings(self) -> list[str]:
        """The build a run waits for (or that failed under it), then drift in words: one line per job
        that did not run what the version records."""
        out = [self.build] if self.build else []
        for obs in self.observations:
            if obs.drift:
                out.append(f"job {obs.job_id}: {drift_words(obs.drift)}")
        return out


def drift_words(drift: dict[str, Any]) -> str:
    """One line saying how a job's environment differed from its recorded version."""
    if "image_id" in drift:
        return (
            f"ran image {drift['image_id']['observed']}, the version records {drift['image_id']['recorded']}"
        )
    if "error" in drift:
        return str(drift["error"])
    parts = []
    for key in ("added", "removed", "upgraded", "downgraded", "changed"):
        items = drift.get("packages", {}).get(key) or []
        if items:
            names = ", ".join(
                f"{p['name']} {p.get('from', p.get('version'))}" + (f" -> {p['to']}" if "to" in p else "")
                for p in items[:5]
            )
            parts.append(f"{key} {names}")
    return "installed set differs from the recorded one: " + "; ".join(parts)


def observe(host: RunHost, store: EnvStore, run: Run, job_id: str, version: EnvVersion) -> None:
    """Record what job ``job_id`` of ``run`` found at its start (the file its pre-flight wrote), with its
    drift from ``version``; nothing while the file is not there."""
    path = f"{run.run_dir}/{record_file(job_id)}"
    read = host.read_file(
        path, as_user=run.os_user or "root", max_bytes=MAX_OBSERVED_BYTES, inside=run.run_dir
    )
    if not read.exists or read.error:
        return  # not written (yet, or the job ended before its pre-flight did): nothing to record
    try:
        observed = json.loads(read.data)
        if not isinstance(observed, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        observed = {"error": f"unreadable {path}: {exc}"}
    store.observe(Observation(run.id, job_id, version.id, observed, drift_of(version, observed)))


def record_file(job_id: str) -> str:
    """The file a job writes what it found at its start to, under its run directory."""
    return f"environment-{job_id}.json"


def drift_of(version: EnvVersion, observed: dict[str, Any]) -> dict[str, Any] | None:
    """How what a job found differs from the recorded version; None when it ran what is recorded."""
    if "error" in observed:
        return {"error": observed["error"]}
    if version.kind == "image":
        seen = observed.get("image_id")
        if seen != version.image_id:
            return {"image_id": {"recorded": version.image_id, "observed": seen}}
        return None
    if version.kind == "python":
        packages = observed.get("packages")
        if not isinstance(packages, dict):
            return {"error": "the job did not list its packages"}
        diff = package_diff(version.packages, {str(k): str(v) for k, v in packages.items()})
        return None if is_empty(diff) else {"packages": diff}
    return None
