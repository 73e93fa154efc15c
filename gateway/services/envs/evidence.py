"""A run's environment as evidence: the version it named, what its jobs found, and its advisories.

``environment_evidence`` is what evidence bundles, release snapshots and ``gw trace`` carry for a
run (beside the run's own ``environment`` record, which names the version): the version's ref,
digest, status and build, its installed package list and its hash, what each job found at its
start with its drift, and the findings of the site's advisory scan at the time of the export.
"""

from __future__ import annotations

from typing import Any

from gateway.core.runs.values import Run
from gateway.services.envs.registry import EnvironmentService


def environment_evidence(envs: EnvironmentService, run: Run) -> dict[str, Any] | None:
    """The environment record of ``run`` (the caller may read it); None when it named no registered
    environment."""
    found = envs.catalog.of_run(run)
    version = found.version
    if version is None:
        return None
    report = envs.scan_version(version)
    return {
        "ref": version.ref,
        "version_id": version.id,
        "kind": version.kind,
        "digest": version.digest,
        "status": version.status,
        "registered_by": version.registered_by,
        "registered_at": version.registered_at.isoformat(),
        "location": version.location,
        "image_id": version.image_id,
        "modules": version.modules,
        "lock_sha256": version.content.get("lock_sha256"),
        "build_run_id": version.build_run_id,
        "failure": version.failure,
        "parent_id": version.parent_id,
        "locked": version.content.get("locked"),  # python: what the lock pins
        "packages": dict(sorted(version.packages.items())),  # python: the installed set, once built
        "packages_sha256": version.packages_sha256,
        "observations": [
            {"job_id": o.job_id, "observed": o.observed, "drift": o.drift} for o in found.observations
        ],
        "warnings": found.warnings,
        "advisories": {
            "source": report.source,
            "advisories": report.advisories,
            "packages_checked": report.scanned,
            "findings": [f.to_dict() for f in report.findings],
            "problems": report.problems,
        },
    }
