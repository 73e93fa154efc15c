"""Settling a python version's build: once its build run has ended, the installed set the job wrote
beside the venv (``INSTALLED_FILE``) is recorded (``ready``), or why it failed (``failed``), audited
as the gateway's own ``env.build``; a build whose run was never recorded is found by its tag or,
after ``ORPHAN_GRACE_S``, failed."""

from __future__ import annotations

import builtins
import json
from datetime import UTC, datetime
from typing import Any

from gateway.adapters.runhost import RunHost
from gateway.core.audit.entry import AuditEntry
from gateway.core.envs.diff import is_empty, package_diff
from gateway.core.envs.record import EnvVersion, packages_sha256
from gateway.core.runs.values import Run, RunFilter
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.errors import NotFound
from gateway.services.envs.observed import MAX_OBSERVED_BYTES
from gateway.store.envs.envs import EnvStore
from gateway.store.runs.runs import RunStore

INSTALLED_FILE = "gw-installed.json"  # beside a built venv: its installed set, written by the build job
# A build asked for this long ago with no run recorded was never submitted: its registering request
# records the run within seconds of the version (admission, then one insert), or died.
ORPHAN_GRACE_S = 120.0


class BuildSettler:
    """Settles builds as their versions are read (``settle``) and periodically (``settle_building``)."""

    def __init__(
        self, store: EnvStore, runs: RunStore, host: RunHost, *, orphan_grace_s: float = ORPHAN_GRACE_S
    ) -> None:
        self.orphan_grace_s = orphan_grace_s  # how long a build may go without a run before it is failed
        self.store = store
        self.runs = runs
        self.host = host

    def build_job_id(self, version: EnvVersion) -> str | None:
        """The Slurm job id of a building version's build run (None: not submitted yet, or no build)."""
        if not version.build_run_id:
            return None
        try:
            run = self.runs.get_run(version.build_run_id)
        except NotFound:
            return None
        jobs = [a.job_id for a in run.attempts if a.job_id]
        return jobs[-1] if jobs else None

    def settle(self, version: EnvVersion) -> EnvVersion:
        """``version``, its build settled first when it is a python version whose build run ended.

        A build with no run linked is looked for by its tag (the registering request died after its
        run was recorded: the run is linked now, and Slurm's exactly-once reconciliation settles its
        job); with none after ``ORPHAN_GRACE_S`` its job was never submitted, and it is ``failed``
        with that reason (the site's built-in environment then builds again on its next need)."""
        if version.status == "building" and not version.build_run_id:
            version = self._orphan(version)
        if version.status != "building" or not version.build_run_id:
            return version
        try:
            run = self.runs.get_run(version.build_run_id)
        except NotFound:
            return version
        if run.state not in TERMINAL:
            return version
        status, packages, failure = "failed", None, None
        if run.state is RunState.SUCCEEDED:
            packages, failure = self._installed(version, run)
            status = "ready" if failure is None else "failed"
        else:
            failure = f"build run {run.id} ended {run.state.value}; see gw logs {run.id}"
        parent_diff = None
        if packages is not None and version.parent_id:
            parent = self.store.version(version.parent_id)
            if parent.packages:
                parent_diff = package_diff(parent.packages, packages)
        after: dict[str, Any] = {"environment": version.ref, "status": status}
        if failure:
            after["failure"] = failure
        if packages is not None:
            after.update(packages=len(packages), packages_sha256=packages_sha256(packages))
        if parent_diff is not None and not is_empty(parent_diff):
            after["parent_diff"] = parent_diff
        self.store.finish_build(
            version.id,
            status=status,
            packages=packages,
            packages_sha256=packages_sha256(packages) if packages is not None else None,
            failure=failure,
            parent_diff=parent_diff,
            audit=build_audit(version, after),
        )
        return self.store.version(version.id)

    def settle_building(self) -> builtins.list[EnvVersion]:
        """Every version still ``building`` settled (the periodic reconcile's step): builds that
        ended recorded, a build run a dead request left unlinked linked, one never submitted failed.
        Returns those whose status moved."""
        moved = []
        for version in self.store.building():
            settled = self.settle(version)
            if settled.status != "building":
                moved.append(settled)
        return moved

    def _orphan(self, version: EnvVersion) -> EnvVersion:
        """A building version with no build run linked: its run found by tag and linked, or, once the
        grace is over with none, failed (its build job was never submitted)."""
        found = self.runs.list_runs(RunFilter(tag=version.build_tag, limit=1)).items
        if found:
            self.store.set_build_run(version.id, found[0].id)
            return self.store.version(version.id)
        asked = version.build_requested_at or version.registered_at
        if (datetime.now(UTC) - asked).total_seconds() < self.orphan_grace_s:
            return version  # its registering request may still be submitting it
        failure = (
            f"its build job was never submitted: the request that asked for build {version.build_attempts} "
            f"at {asked:%Y-%m-%d %H:%M:%S} UTC ended before submitting it"
        )
        self.store.finish_build(
            version.id,
            status="failed",
            failure=failure,
            audit=build_audit(version, {"environment": version.ref, "status": "failed", "failure": failure}),
        )
        return self.store.version(version.id)

    def _installed(self, version: EnvVersion, run: Run) -> tuple[dict[str, str] | None, str | None]:
        path = f"{version.location}/{INSTALLED_FILE}"
        read = self.host.read_file(path, as_user=run.os_user or "root", max_bytes=MAX_OBSERVED_BYTES)
        if not read.exists or read.error:
            return None, f"the build run {run.id} left no {path}: {read.error or 'missing'}"
        try:
            packages = json.loads(read.data)["packages"]
            if not isinstance(packages, dict) or not all(isinstance(v, str) for v in packages.values()):
                raise ValueError("packages is not a mapping of names to versions")
        except (ValueError, KeyError, TypeError) as exc:
            return None, f"{path} is not the installed set the build writes: {exc}"
        return {str(k): v for k, v in packages.items()}, None

    def words(self, run: Run, version: EnvVersion) -> str | None:
        """What a run that never started hears of its environment's build: it waits for it, or the
        build failed (Slurm cancels a job whose afterok dependency can no longer be met)."""
        if any(a.start_time is not None for a in run.attempts):
            return None
        version = self.settle(version)
        if version.status == "building":
            return f"waits for environment {version.ref} to be built (build run {version.build_run_id})"
        if version.status == "failed":
            return f"environment {version.ref} failed to build, so this run never started: {version.failure}"
        return None


def build_audit(version: EnvVersion, after: dict[str, Any]) -> AuditEntry:
    """The audit entry of the end of ``version``'s build, the gateway's own ``env.build``: ``after``
    holds its status (and failure, installed set, diff from the parent)."""
    return AuditEntry(
        actor="gateway",
        action="env.build",
        target_type="environment_version",
        target_id=version.id,
        project=version.project,
        source="gateway",
        after=after,
    )
