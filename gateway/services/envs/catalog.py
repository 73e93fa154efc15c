"""Reading environments, resolving a run's ``environment`` reference, settling builds, and reading
back what each job found at its start.

Access follows the owning project: its viewers read (``env.read``), members register
(``env.register``); a reference to another project's environment answers NotFound. The site's own
environments (project ``SITE_PROJECT``: the built-in eval environment) are read by everyone and
any run may name them. A python
version's build is settled when it is next read: once its build run has ended, the installed set
the job wrote beside the venv is recorded (``ready``), or why it failed (``failed``), audited.
"""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gateway.adapters.runhost import RunHost
from gateway.core.access.policy import allowed, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.envs.advisories import Finding
from gateway.core.envs.diff import is_empty, package_diff
from gateway.core.envs.record import (
    SITE_PROJECT,
    Environment,
    EnvLaunch,
    EnvVersion,
    launch_of,
    packages_sha256,
)
from gateway.core.runs.values import Run, RunFilter
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.core.spec.lineage import parse_dataset_ref
from gateway.errors import Conflict, NotFound, SpecError, SpecIssue
from gateway.store.envs.envs import EnvStore, Observation
from gateway.store.runs.runs import RunStore

INSTALLED_FILE = "gw-installed.json"  # beside a built venv: its installed set, written by the build job
MAX_OBSERVED_BYTES = 1 << 20
# A build asked for this long ago with no run recorded was never submitted: its registering request
# records the run within seconds of the version (admission, then one insert), or died.
ORPHAN_GRACE_S = 120.0


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


class EnvCatalog:
    def __init__(
        self,
        store: EnvStore,
        runs: RunStore,
        host: RunHost,
        *,
        runtime: str = "podman",
        orphan_grace_s: float = ORPHAN_GRACE_S,
    ) -> None:
        self.orphan_grace_s = orphan_grace_s  # how long a build may go without a run before it is failed
        self.store = store
        self.runs = runs
        self.host = host
        self.runtime = runtime

    # -- reading ----------------------------------------------------------------------------

    def list(self, *, principal: Principal, project: str | None = None) -> builtins.list[Environment]:
        """Environments of the caller's projects (of ``project`` only, when given)."""
        visible = visible_projects(principal)
        if visible is not None:
            visible = [*visible, SITE_PROJECT]
        if project is not None:
            if visible is not None and project not in visible:
                return []
            visible = [project]
        return self.store.environments(visible)

    def get(self, project: str, name: str, *, principal: Principal) -> Environment:
        """``project/name``; NotFound when there is none or the caller may not read it."""
        if not readable(principal, project):
            raise NotFound(f"no environment {project}/{name}")
        return self.store.environment(project, name)

    def versions(self, project: str, name: str, *, principal: Principal) -> builtins.list[EnvVersion]:
        """Every version, oldest first, builds that ended settled; NotFound as ``get``."""
        env = self.get(project, name, principal=principal)
        return [self.settle(v) for v in self.store.versions(env.id)]

    def resolve(
        self, text: str, *, project: str, principal: Principal, field: str = "environment"
    ) -> EnvVersion:
        """The version ``[project/]name@version`` names (``project`` when it names none), settled."""
        try:
            ref = parse_dataset_ref(text)
        except ValueError as exc:
            raise SpecError([SpecIssue(field, str(exc).replace("dataset", "environment"), text)]) from exc
        env = self.get(ref.project or project, ref.name, principal=principal)
        return self.settle(
            self.store.find_version(env.id, number=ref.number, digest_prefix=ref.digest_prefix)
        )

    def by_id(self, version_id: str, *, principal: Principal) -> EnvVersion:
        """The version with id ``version_id``, settled; NotFound as ``get``."""
        version = self.store.version(version_id)
        self.get(version.project, version.name, principal=principal)
        return self.settle(version)

    # -- runs -------------------------------------------------------------------------------

    def runs_using(self, version: EnvVersion, limit: int = 200) -> builtins.list[str]:
        """Ids of runs whose jobs were seen in ``version`` (the caller may read it), newest first."""
        return self.store.runs_using(version.id, limit=limit)

    def launch_for(
        self, text: str, *, project: str, principal: Principal, dependency: str | None = None
    ) -> EnvLaunch:
        """What a run of ``project`` naming ``text`` is given; ``latest`` is pinned to a number.

        A run may name its own project's environments and the site's (NotFound otherwise); a python
        version still building is refused (Conflict) with what to do unless the run waits for its
        build job (``dependency`` holds ``afterok:<that job>``, all of it required); one whose build
        failed is refused.
        """
        try:
            ref = parse_dataset_ref(text)
        except ValueError as exc:
            raise SpecError(
                [SpecIssue("environment", str(exc).replace("dataset", "environment"), text)]
            ) from exc
        if ref.project not in (None, project, SITE_PROJECT):
            raise NotFound(
                f"no environment {text} for project {project}: a run names its own project's environments "
                f"or the site's ({SITE_PROJECT}/...)"
            )
        version = self.resolve(text, project=project, principal=principal)
        if version.status == "building" and not waits_for(dependency, self.build_job_id(version)):
            raise Conflict(
                f"environment {version.ref} is still being built (run {version.build_run_id}); "
                f"submit when it is ready: gw env show {version.ref}"
            )
        if version.status == "failed":
            raise Conflict(
                f"environment {version.ref} failed to build: {version.failure}; fix the lock file and "
                f"register a new version (gw env register {version.project}/{version.name} --lock FILE)"
            )
        return launch_of(version, runtime=self.runtime)

    def of_run(self, run: Run) -> RunEnvironment:
        """The run's environment and, read back now for every job that started, what each found."""
        record = run.environment or {}
        version_id = record.get("version_id")
        if not version_id:
            return RunEnvironment(run.id, run.environment, None, [])
        # settled first: a job's drift is measured against the installed set its build recorded
        version = self.settle(self.store.version(version_id))
        known = {o.job_id for o in self.store.observations(run.id)}
        for attempt in run.attempts:
            if attempt.job_id and attempt.job_id not in known and attempt.start_time is not None:
                self._observe(run, attempt.job_id, version)
        observations = self.store.observations(run.id)
        return RunEnvironment(
            run.id, run.environment, version, observations, build=self._build_words(run, version)
        )

    def build_note(self, run: Run) -> str | None:
        """Why ``run`` has not started, or never will, in words, when its environment's build is the
        reason (it waits for it, or it failed); None otherwise."""
        version_id = (run.environment or {}).get("version_id")
        if not version_id:
            return None
        try:
            return self._build_words(run, self.store.version(version_id))
        except NotFound:
            return None

    def _build_words(self, run: Run, version: EnvVersion) -> str | None:
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

    def _observe(self, run: Run, job_id: str, version: EnvVersion) -> None:
        path = f"{run.run_dir}/{record_file(job_id)}"
        read = self.host.read_file(
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
        self.store.observe(Observation(run.id, job_id, version.id, observed, drift_of(version, observed)))

    # -- builds -----------------------------------------------------------------------------

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
            audit=_build_audit(version, after),
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
            audit=_build_audit(version, {"environment": version.ref, "status": "failed", "failure": failure}),
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


def readable(principal: Principal, project: str) -> bool:
    """Whether ``principal`` reads ``project``'s environments: its viewers and up; everyone, the site's."""
    return project == SITE_PROJECT or allowed(principal, "env.read", project)


def waits_for(dependency: str | None, job_id: str | None) -> bool:
    """Whether a Slurm ``dependency`` holds ``afterok`` on ``job_id`` as a condition all of which
    must hold (joined by ',' only: with '?' another condition could start the job first)."""
    if not dependency or not job_id or "?" in dependency:
        return False
    for item in dependency.split(","):
        kind, _, jobs = item.partition(":")
        if kind == "afterok" and job_id in jobs.split(":"):
            return True
    return False


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


def _build_audit(version: EnvVersion, after: dict[str, Any]) -> AuditEntry:
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
