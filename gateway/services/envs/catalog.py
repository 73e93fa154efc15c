"""Reading environments, resolving a run's ``environment`` reference, and a run's environment as its
jobs found it (what they found: ``observed.py``; settling builds: ``settle.py``).

Access follows the owning project: its viewers read (``env.read``), members register
(``env.register``); a reference to another project's environment answers NotFound. The site's own
environments (project ``SITE_PROJECT``: the built-in eval environment) are read by everyone and
any run may name them. A python version's build is settled when it is next read (``BuildSettler``).
"""

from __future__ import annotations

import builtins

from gateway.adapters.runhost import RunHost
from gateway.core.access.policy import allowed, visible_projects
from gateway.core.access.values import Principal
from gateway.core.envs.record import SITE_PROJECT, Environment, EnvLaunch, EnvVersion, launch_of
from gateway.core.runs.values import Run
from gateway.core.spec.lineage import parse_dataset_ref
from gateway.errors import Conflict, NotFound, SpecError, SpecIssue
from gateway.services.envs.observed import RunEnvironment, observe
from gateway.services.envs.settle import ORPHAN_GRACE_S, BuildSettler
from gateway.store.envs.envs import EnvStore
from gateway.store.runs.runs import RunStore


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
        self.builds = BuildSettler(store, runs, host, orphan_grace_s=orphan_grace_s)
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
        return [self.builds.settle(v) for v in self.store.versions(env.id)]

    def resolve(
        self, text: str, *, project: str, principal: Principal, field: str = "environment"
    ) -> EnvVersion:
        """The version ``[project/]name@version`` names (``project`` when it names none), settled."""
        try:
            ref = parse_dataset_ref(text)
        except ValueError as exc:
            raise SpecError([SpecIssue(field, str(exc).replace("dataset", "environment"), text)]) from exc
        env = self.get(ref.project or project, ref.name, principal=principal)
        return self.builds.settle(
            self.store.find_version(env.id, number=ref.number, digest_prefix=ref.digest_prefix)
        )

    def by_id(self, version_id: str, *, principal: Principal) -> EnvVersion:
        """The version with id ``version_id``, settled; NotFound as ``get``."""
        version = self.store.version(version_id)
        self.get(version.project, version.name, principal=principal)
        return self.builds.settle(version)

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
        if version.status == "building" and not waits_for(dependency, self.builds.build_job_id(version)):
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
        version = self.builds.settle(self.store.version(version_id))
        known = {o.job_id for o in self.store.observations(run.id)}
        for attempt in run.attempts:
            if attempt.job_id and attempt.job_id not in known and attempt.start_time is not None:
                observe(self.host, self.store, run, attempt.job_id, version)
        observations = self.store.observations(run.id)
        return RunEnvironment(
            run.id, run.environment, version, observations, build=self.builds.words(run, version)
        )

    def build_note(self, run: Run) -> str | None:
        """Why ``run`` has not started, or never will, in words, when its environment's build is the
        reason (it waits for it, or it failed); None otherwise."""
        version_id = (run.environment or {}).get("version_id")
        if not version_id:
            return None
        try:
            return self.builds.words(run, self.store.version(version_id))
        except NotFound:
            return None


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
