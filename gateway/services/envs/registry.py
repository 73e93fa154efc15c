"""Registering environment versions, building locked ones, and comparing versions and runs.

- python: the lock file is checked (every requirement pinned with hashes) and recorded; a Slurm
  job in the project's ``build_queue`` makes the venv under ``Settings.environments_dir`` and writes
  its installed set beside it; the version is ``building`` until that job ends (``EnvCatalog.settle``).
- image: the archive (``podman save``) is read on the run host as the caller's OS user and the image
  id is recorded; jobs load it into their user's image store when it is missing there.
- modules: recorded as given.

A version derives from the environment's latest one (or the ``parent`` given): its dependency
change record (``package_diff``) is stored with it and written to the audit log with who made it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gateway.adapters.advisories import OsvDirectory
from gateway.adapters.runhost import RunHost
from gateway.core import names
from gateway.core.access.policy import allowed, require
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.envs.advisories import Finding, scan, worst
from gateway.core.envs.diff import package_diff
from gateway.core.envs.lockfile import lock_content
from gateway.core.envs.record import KINDS, SITE_PROJECT, EnvVersion, content_digest
from gateway.core.releases.domain import AdvisoryCheck
from gateway.core.spec.parts import MODULE_NAME
from gateway.errors import Conflict, NotFound, SpecError, SpecIssue
from gateway.services.envs.build import MAX_BUILDS, Builds, build_run_spec
from gateway.services.envs.catalog import EnvCatalog, readable
from gateway.services.envs.observed import RunEnvironment
from gateway.services.runs.run_service import RunService
from gateway.settings import Settings
from gateway.store.access.access import AccessStore
from gateway.store.envs.envs import EnvStore, NewEnvVersion

MAX_MODULES = 64
MAX_DESCRIPTION = 4096


@dataclass(frozen=True)
class EnvRegistration:
    """A version to register: what ``POST /environments/{project}/{name}/versions`` carries."""

    project: str
    name: str
    kind: str  # python | image | modules
    lock: str | None = None  # python: the lock file's text
    build_queue: str | None = None  # python: the project's queue the build job runs in
    archive: str | None = None  # image: absolute path of a podman save archive on the shared file system
    modules: list[str] = field(default_factory=list)  # modules: names (name/version), loaded in order
    description: str = ""
    parent: str | None = None  # [project/]name@version it derives from; default the latest
    pip_sources: bool = False  # python: pip may build pinned source archives (the gateway's own locks)


@dataclass(frozen=True)
class ScanReport:
    """A version's packages checked against the site's advisory database."""

    version: EnvVersion
    findings: list[Finding]
    scanned: int  # packages checked
    source: str | None  # the advisory directory; None: the site keeps none
    advisories: int  # how many it holds
    problems: list[str]  # files of it that could not be read

    @property
    def worst(self) -> str | None:
        """The highest severity found; None for none."""
        return worst(self.findings)


@dataclass(frozen=True)
class EnvDiff:
    old: str  # what was compared: a version ref, or a run id and its version
    new: str
    old_kind: str
    new_kind: str
    packages: dict[str, Any]  # package_diff
    image: dict[str, str | None] | None = None  # image ids, when either side is an image


class EnvironmentService:
    def __init__(
        self,
        store: EnvStore,
        catalog: EnvCatalog,
        access: AccessStore,
        runs: RunService,
        host: RunHost,
        settings: Settings,
        advisories: OsvDirectory | None = None,
    ) -> None:
        self.advisories = advisories or OsvDirectory(settings.advisory_dir)
        self.store = store
        self.catalog = catalog
        self.access = access
        self.runs = runs
        self.host = host
        self.settings = settings
        self.builds = Builds(store, runs, settings)

    def register(self, req: EnvRegistration, *, principal: Principal) -> tuple[EnvVersion, bool]:
        """Record a version (or find the one with the same content); returns it and whether it is new.

        SpecError for a bad name, kind, lock, archive or module; NotFound for a project the caller
        is not in; Forbidden without ``env.register``; Conflict when the same content failed to build.
        """
        if not names.NAME.fullmatch(req.name):
            raise SpecError(
                [SpecIssue("name", f"not a valid environment name; use {names.NAME_HELP}", req.name)]
            )
        if req.project == SITE_PROJECT:
            raise SpecError(
                [
                    SpecIssue(
                        "project",
                        f"{SITE_PROJECT} holds the site's own environments, which the gateway registers "
                        "itself (the built-in eval environment); register in your project",
                        req.project,
                    )
                ]
            )
        if principal.role(req.project) is None and not principal.is_admin:
            raise NotFound(f"no project {req.project!r} that {principal.user} is a member of")
        self.access.project(req.project)
        require(principal, "env.register", req.project)
        return self._record(req, principal, build_project=req.project)

    def register_targets(self, principal: Principal) -> list[tuple[str, list[str]]]:
        """The projects ``principal`` may register environments in (``env.register``), each with its
        queues' names (where a python version's build job may run): what the web form offers."""
        out = []
        for project in self.access.projects():
            if project.name != SITE_PROJECT and allowed(principal, "env.register", project.name):
                out.append((project.name, [q.name for q in project.queues]))
        return out

    def register_site(
        self, req: EnvRegistration, *, build_project: str, principal: Principal
    ) -> tuple[EnvVersion, bool]:
        """Record a site environment (project ``SITE_PROJECT``, which every user reads) on the
        gateway's behalf, as ``register`` does: its build job is a run of ``build_project`` by
        ``principal`` (admitted in that project's ``build_queue`` as any run of theirs is).

        Used for the built-in eval environment on first need (``SiteEvalEnvironment``)."""
        if req.project != SITE_PROJECT:
            raise SpecError([SpecIssue("project", f"a site environment's project is {SITE_PROJECT}")])
        return self._record(req, principal, build_project=build_project)

    def _record(
        self, req: EnvRegistration, principal: Principal, *, build_project: str
    ) -> tuple[EnvVersion, bool]:
        if req.kind not in KINDS:
            raise SpecError([SpecIssue("kind", f"must be one of {', '.join(KINDS)}", req.kind)])
        if len(req.description) > MAX_DESCRIPTION:
            raise SpecError([SpecIssue("description", f"at most {MAX_DESCRIPTION} characters")])
        parent = self._parent(req, principal)
        content, location, packages, status = self._content(req, principal)
        digest = content_digest(req.kind, content)
        build = None
        if req.kind == "python":  # the build job is admitted before anything is written
            assert req.build_queue is not None and req.lock is not None and location is not None
            build = build_run_spec(
                self.settings,
                project=build_project,
                name=req.name,
                location=location,
                lock=req.lock,
                queue=req.build_queue,
                env_project=req.project,
                sources=req.pip_sources,
            )
            self.runs.admission.admit(build, principal)
        parent_diff = None
        mine = content.get("locked") or _module_set(content.get("modules", []))
        if parent is not None:
            theirs = parent.content.get("locked") or _module_set(parent.modules)
            if mine or theirs:
                parent_diff = package_diff(theirs, mine)
        version, created = self.store.register(
            project=req.project,
            name=req.name,
            version=NewEnvVersion(
                kind=req.kind,
                digest=digest,
                content=content,
                status=status,
                registered_by=principal.user,
                description=req.description,
                location=location,
                packages=packages,
                packages_sha256=None,
                parent_id=parent.id if parent else None,
                parent_diff=parent_diff,
            ),
            audit=AuditEntry(
                actor=principal.user,
                action="env.register",
                target_type="environment_version",
                target_id="",
                project=req.project,
                source=principal.source,
            ),
        )
        if not created:
            if version.status == "failed":
                raise Conflict(
                    f"this lock is {version.ref}, whose build failed: {version.failure}; change the lock "
                    "file and register it again"
                )
            return self.catalog.builds.settle(version), False
        if build is not None:
            version = self.builds.submit(version, build, principal)
        return version, True

    def rebuild(
        self,
        version: EnvVersion,
        *,
        build_queue: str,
        build_project: str,
        principal: Principal,
        max_builds: int = MAX_BUILDS,
    ) -> EnvVersion:
        """A failed python version built again (``Builds.rebuild``: admitted first, at a new
        directory, the failure kept and audited); Conflict once it has had ``max_builds`` builds."""
        return self.builds.rebuild(
            version,
            build_queue=build_queue,
            build_project=build_project,
            principal=principal,
            max_builds=max_builds,
        )

    def _parent(self, req: EnvRegistration, principal: Principal) -> EnvVersion | None:
        if req.parent is not None:
            return self.catalog.resolve(req.parent, project=req.project, principal=principal, field="parent")
        try:
            latest = self.store.environment(req.project, req.name).latest
        except NotFound:
            return None
        return latest if latest is not None and latest.kind == req.kind else None

    def _content(
        self, req: EnvRegistration, principal: Principal
    ) -> tuple[dict[str, Any], str | None, dict[str, str] | None, str]:
        """(content, location, packages, status) of a registration, checked."""
        if req.kind == "python":
            if not req.lock:
                raise SpecError([SpecIssue("lock", "a python environment needs its lock file's text")])
            if not req.build_queue:
                raise SpecError([SpecIssue("build_queue", "name the project's queue the build job runs in")])
            try:
                content = lock_content(req.lock, pip_sources=req.pip_sources)
            except ValueError as exc:
                raise SpecError([SpecIssue("lock", str(exc))]) from exc
            return content, self.builds.location(req.project, req.name), None, "building"
        if req.kind == "image":
            if not req.archive or not names.SAFE_PATH.fullmatch(req.archive):
                raise SpecError(
                    [
                        SpecIssue(
                            "archive",
                            f"give the image archive (podman save) as {names.SAFE_PATH_HELP}",
                            req.archive,
                        )
                    ]
                )
            # read as the caller's OS user: the kernel decides whether they may read it
            info = self.host.image_archive(req.archive, as_user=self.runs.admission.os_user(principal))
            if info.get("error"):
                raise SpecError([SpecIssue("archive", str(info["error"]), req.archive)])
            content = {"image_id": info["image_id"], "tags": info.get("tags", [])}
            return content, req.archive, None, "ready"
        if not req.modules:
            raise SpecError([SpecIssue("modules", "a modules environment lists at least one module")])
        if len(req.modules) > MAX_MODULES:
            raise SpecError([SpecIssue("modules", f"at most {MAX_MODULES} modules")])
        for module in req.modules:
            if not MODULE_NAME.fullmatch(module):
                raise SpecError([SpecIssue("modules", "not a module name (name or name/version)", module)])
        return {"modules": list(req.modules)}, None, _module_set(req.modules), "ready"

    # -- comparing --------------------------------------------------------------------------

    def diff(self, old: str, new: str, *, project: str | None, principal: Principal) -> EnvDiff:
        """Two environment versions (``[project/]name@version``) or two runs (their ids) compared."""
        a_label, a = self._side(old, project, principal)
        b_label, b = self._side(new, project, principal)
        image = None
        if "image" in (a.kind, b.kind):
            image = {"old": a.image_id, "new": b.image_id}
        return EnvDiff(a_label, b_label, a.kind, b.kind, package_diff(_packages(a), _packages(b)), image)

    def _side(self, text: str, project: str | None, principal: Principal) -> tuple[str, EnvVersion]:
        if "@" in text:
            if project is None and "/" not in text.split("@")[0]:
                raise SpecError([SpecIssue("project", "give the project of a reference without one", text)])
            project = project or text.split("/")[0]
            version = self.catalog.resolve(text, project=project, principal=principal)
            return version.ref, version
        run = self.runs.get(text, principal=principal)
        version_id = (run.environment or {}).get("version_id")
        if not version_id:
            raise SpecError([SpecIssue("run", f"run {run.id} named no registered environment", text)])
        version = self.catalog.by_id(version_id, principal=principal)
        return f"{run.id} ({version.ref})", version

    def of_run(self, run_id: str, *, principal: Principal) -> RunEnvironment:
        """The run's environment, what each of its jobs found (read back now), and its advisories."""
        found = self.catalog.of_run(self.runs.get(run_id, principal=principal))
        if found.version is None:
            return found
        return replace(found, findings=self.scan_version(found.version).findings)

    def scan(self, text: str, *, project: str, principal: Principal) -> ScanReport:
        """The packages of version ``text`` checked against the site's OSV directory (advisory_dir)."""
        return self.scan_version(self.catalog.resolve(text, project=project, principal=principal))

    def scan_version(self, version: EnvVersion) -> ScanReport:
        """``version``'s packages checked against the site's advisory directory (none for images, modules)."""
        loaded = self.advisories.load()
        packages = _packages(version) if version.kind == "python" else {}
        findings = scan(packages, loaded.advisories)
        return ScanReport(
            version, findings, len(packages), loaded.source, len(loaded.advisories), loaded.problems
        )

    def advisory_check(self, run_id: str) -> AdvisoryCheck:
        """The environment version run ``run_id`` used checked against the site's advisories, for a
        release policy's advisory rule (the caller already may read the run's release)."""
        try:
            run = self.catalog.runs.get_run(run_id)
        except NotFound:
            return AdvisoryCheck(None, unchecked=f"the release's run {run_id} is no longer on record")
        version_id = (run.environment or {}).get("version_id")
        if not version_id:
            return AdvisoryCheck(None)  # no registered environment: nothing known against it
        try:
            version = self.catalog.builds.settle(self.store.version(version_id))
        except NotFound:
            return AdvisoryCheck(None, unchecked=f"run {run_id}'s environment {version_id} is gone")
        report = self.scan_version(version)
        if report.source is None:
            return AdvisoryCheck(
                version.ref, unchecked="the site keeps no advisory directory (advisory_dir) to check against"
            )
        if report.problems and not report.findings:
            return AdvisoryCheck(
                version.ref, unchecked=f"the advisory directory could not be read: {report.problems[0]}"
            )
        return AdvisoryCheck(
            version.ref,
            tuple((f.advisory, f.severity, f.package, f.version) for f in report.findings),
        )

    def readable(self, version: EnvVersion, principal: Principal) -> bool:
        """True when ``principal`` may read ``version`` (its project's viewers and up; anyone, a site
        environment)."""
        return readable(principal, version.project)


def _packages(version: EnvVersion) -> dict[str, str]:
    """The set to compare: the installed set once built, else what the lock pins, or the modules."""
    return version.packages or dict(version.content.get("locked") or {}) or _module_set(version.modules)


def _module_set(modules: list[str]) -> dict[str, str]:
    """``["cuda/12.1", "gcc"]`` as a package set: ``{"cuda": "12.1", "gcc": ""}``."""
    out = {}
    for module in modules:
        name, _, version = module.partition("/")
        out[name] = version
    return out
