"""Eval suites: registering immutable versions from suite definitions, and reading them.

A version's datasets are resolved for the suite's project when it is
registered (``tiny-cloze@latest`` becomes the exact version and its digest),
through ``DatasetService``, so a suite can only name data its project may
read; its content hash covers the definition, the prompt template and those
digests. Registering the same content again returns the existing version.
Access follows the suite's project: its viewers read, its members register
a new suite. A new version of an existing suite needs the suite's
``versions_by`` role (leads by default; the suite's owners, its project's
leads, may let members do it): the suite's versions are what alias policies
gate on. The same content again is always answered with the existing version.
"""

from __future__ import annotations

import builtins
from typing import Any

from gateway.core.access.policy import allowed, rank, require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.eval.domain import EvalSuite, SuiteRef, SuiteVersionRecord, parse_suite_ref
from gateway.core.eval.suite import SuiteVersion, build_suite
from gateway.errors import Forbidden, NotFound, SpecError, SpecIssue
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.lineage.datasets import DatasetService
from gateway.store.access.access import AccessStore
from gateway.store.eval.evals import EvalStore, ResolvedDataset

VERSIONS_BY: tuple[str, ...] = ("lead", "member")  # the least role that may register a new version


class EvalSuiteService:
    def __init__(self, store: EvalStore, datasets: DatasetService, access: AccessStore) -> None:
        self.store = store
        self.datasets = datasets
        self.access = access
        self.environments: EnvCatalog | None = None  # checks a suite's environment at registration (wiring)

    # -- registering ------------------------------------------------------------------------------

    def register(self, data: Any, *, principal: Principal) -> tuple[SuiteVersionRecord, bool]:
        """Register a suite version from its definition (parsed YAML/JSON); returns it and whether it is new.

        The prompt template comes as text (``prompt_template``): ``gw eval suite
        register`` reads a ``prompt_template_file`` for you. Raises SpecError
        naming each bad field (a dataset the project cannot read is one),
        NotFound for a project the caller has no role in, Forbidden below member.
        """
        if isinstance(data, dict) and "prompt_template_file" in data:
            raise SpecError(
                [
                    SpecIssue(
                        "prompt_template_file",
                        "the gateway stores the template's text: send it as prompt_template "
                        "(gw eval suite register reads the file for you)",
                    )
                ],
                what="eval suite",
            )
        suite = build_suite(data)
        self._may_register(suite.project, principal)
        resolved = self._datasets(suite, principal)
        self._environment(suite, principal)
        content_hash = suite.content_hash({d.ref: d.digest for d in resolved})
        self._may_add_version(suite, content_hash, principal)
        return self.store.register_version(
            suite,
            content_hash=content_hash,
            datasets=resolved,
            registered_by=principal.user,
            audit=AuditEntry(
                actor=principal.user,
                action="eval.suite.register",
                target_type="eval_suite_version",
                target_id="",
                project=suite.project,
                source=principal.source,
            ),
        )

    def _may_register(self, project: str, principal: Principal) -> None:
        if principal.role(project) is None and not principal.is_admin:
            raise NotFound(f"no project {project!r} that {principal.user} is a member of")
        try:
            self.access.project(project)
        except NotFound:
            raise NotFound(f"no project {project!r}") from None
        require(principal, "eval.suite.register", project)

    def _may_add_version(self, suite: SuiteVersion, content_hash: str, principal: Principal) -> None:
        """Forbidden when ``suite`` exists, has no version with this content, and the caller's role is
        below the suite's ``versions_by``."""
        try:
            found = self.store.suite(suite.project, suite.name)
        except NotFound:
            return  # a new suite: its first version
        if self.store.version_by_hash(found.id, content_hash) is not None:
            return  # the same content again: the existing version, nothing written
        if principal.is_admin or rank(principal.role(suite.project)) >= rank(found.versions_by):
            return
        raise Forbidden(
            f"a new version of eval suite {suite.project}/{suite.name} needs the role {found.versions_by} "
            f"(the suite's setting; {principal.user} is {principal.role(suite.project)}): ask a lead of "
            f"{suite.project} to register it, or to let members do it (`gw eval suite settings "
            f"{suite.project}/{suite.name} --versions-by member`)"
        )

    # -- settings ---------------------------------------------------------------------------------

    def set_settings(
        self,
        project: str,
        name: str,
        *,
        principal: Principal,
        versions_by: str | None = None,
        count_self_reviews: bool | None = None,
    ) -> EvalSuite:
        """Change a suite's settings (its project's leads); what is not given stays. Audited."""
        suite = self._suite(project, name, principal)
        require(principal, "eval.suite.settings", project)
        issues = []
        if versions_by is not None and versions_by not in VERSIONS_BY:
            issues.append(SpecIssue("versions_by", f"one of {', '.join(VERSIONS_BY)}", versions_by))
        if count_self_reviews is not None and not isinstance(count_self_reviews, bool):
            issues.append(SpecIssue("count_self_reviews", "true or false", count_self_reviews))
        if versions_by is None and count_self_reviews is None:
            issues.append(
                SpecIssue("versions_by", "nothing to change: give versions_by or count_self_reviews")
            )
        if issues:
            raise SpecError(issues, what="eval suite settings")
        return self.store.set_settings(
            suite.id,
            versions_by=versions_by if versions_by is not None else suite.versions_by,
            count_self_reviews=(
                count_self_reviews if count_self_reviews is not None else suite.count_self_reviews
            ),
            audit=AuditEntry(
                actor=principal.user,
                action="eval.suite.settings",
                target_type="eval_suite",
                target_id="",
                project=project,
                source=principal.source,
            ),
        )

    def _environment(self, suite: SuiteVersion, principal: Principal) -> None:
        """SpecError when the suite's environment is not a version the registrant may read, or failed."""
        if suite.environment is None or self.environments is None:
            return
        try:
            version = self.environments.resolve(suite.environment, project=suite.project, principal=principal)
        except (NotFound, Forbidden) as exc:
            raise SpecError(
                [
                    SpecIssue(
                        "environment", f"no such environment version you may read ({exc})", suite.environment
                    )
                ],
                what="eval suite",
            ) from exc
        if version.status == "failed":
            raise SpecError(
                [
                    SpecIssue(
                        "environment", f"{version.ref} failed to build: {version.failure}", suite.environment
                    )
                ],
                what="eval suite",
            )

    def _datasets(self, suite: SuiteVersion, principal: Principal) -> list[ResolvedDataset]:
        """Each dataset reference resolved to the exact version the suite's project may read."""
        resolved, issues = [], []
        for i, ref in enumerate(suite.datasets):
            try:
                version = self.datasets.resolve(
                    ref, project=suite.project, principal=principal, for_project=suite.project
                )
            except (NotFound, Forbidden) as exc:
                issues.append(
                    SpecIssue(
                        f"datasets.{i}", f"project {suite.project} cannot read this dataset: {exc}", ref
                    )
                )
                continue
            except SpecError as exc:
                issues.extend(SpecIssue(f"datasets.{i}", issue.message, ref) for issue in exc.issues)
                continue
            if not version.path:
                issues.append(
                    SpecIssue(
                        f"datasets.{i}",
                        f"{version.ref} was registered without a path on the cluster; eval jobs could not "
                        "read it (register it from the directory jobs read)",
                        ref,
                    )
                )
                continue
            resolved.append(ResolvedDataset(ref=ref, version_id=version.id, digest=version.digest))
        if issues:
            raise SpecError(issues, what="eval suite")
        return resolved

    # -- reading ----------------------------------------------------------------------------------

    def list(self, *, principal: Principal, project: str | None = None) -> list[EvalSuite]:
        """Suites of the projects the caller may read (one project with ``project``)."""
        visible = visible_projects(principal)
        if project is not None:
            if visible is not None and project not in visible:
                return []
            visible = [project]
        return self.store.suites(visible)

    def get(
        self, project: str, name: str, *, principal: Principal
    ) -> tuple[EvalSuite, builtins.list[SuiteVersionRecord]]:
        """The suite and all its versions, oldest first; NotFound unless the caller may read its project."""
        suite = self._suite(project, name, principal)
        return suite, self.store.versions(suite.id)

    def version(
        self, project: str, name: str, number: int | None, *, principal: Principal
    ) -> SuiteVersionRecord:
        """Version ``number`` (None: the latest) of ``project/name``."""
        suite = self._suite(project, name, principal)
        try:
            return self.store.version(suite.id, number)
        except NotFound:
            has = "no versions yet" if number is None else f"no version {number}"
            raise NotFound(f"eval suite {project}/{name} has {has}") from None

    def resolve(self, text: str, *, principal: Principal, project: str | None = None) -> SuiteVersionRecord:
        """The version ``[project/]name@version`` names (``project``: the default); SpecError if malformed."""
        try:
            ref: SuiteRef = parse_suite_ref(text)
        except ValueError as exc:
            raise SpecError([SpecIssue("suite", str(exc), text)]) from exc
        owner = ref.project or project
        if owner is None:
            raise SpecError([SpecIssue("suite", "name the suite's project: PROJECT/NAME@VERSION", text)])
        return self.version(owner, ref.name, ref.number, principal=principal)

    def version_by_id(self, version_id: str, *, principal: Principal) -> SuiteVersionRecord:
        """One suite version by id, if the caller may read its project (else NotFound)."""
        version = self.store.version_by_id(version_id)
        if not allowed(principal, "eval.read", version.project):
            raise NotFound(f"no suite version {version_id!r}")
        return version

    def _suite(self, project: str, name: str, principal: Principal) -> EvalSuite:
        if not allowed(principal, "eval.read", project):
            raise NotFound(f"no eval suite {project}/{name}")
        return self.store.suite(project, name)
