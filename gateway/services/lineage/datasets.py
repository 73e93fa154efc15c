"""Datasets: registering content-addressed versions, reading them, sharing, and resolving run inputs.

Access follows the owning project: its members may read and register
(``dataset.read``/``dataset.register``), its leads share a dataset with
another project, whose members may then read it and use it in runs, never
register versions of it. Outside those projects a dataset answers NotFound.

The manifest (relative path, size, sha256 of every file) is computed where
the files are (``gw dataset register`` scans them with
``gateway.adapters.files.scan``); the gateway checks it and computes the
version's digest over it itself.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

from gateway.core import names
from gateway.core.access.policy import allowed, require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.lineage.manifest import (
    FileEntry,
    ManifestDiff,
    check_entries,
    diff_manifests,
    manifest_digest,
)
from gateway.core.lineage.values import Dataset, DatasetVersion
from gateway.core.spec.lineage import DatasetRef, parse_dataset_ref
from gateway.errors import Forbidden, NotFound, SpecError, SpecIssue
from gateway.store.access.access import AccessStore
from gateway.store.lineage.datasets import DatasetStore, NewVersion
from gateway.store.runs.runs import RunStore

MAX_TEXT = 64 * 1024


@dataclass(frozen=True)
class Registration:
    """A version to register: what ``POST /datasets/{project}/{name}/versions`` carries."""

    project: str
    name: str
    files: list[dict] = field(default_factory=list)  # path, size, sha256 of every file
    kind: str = "directory"  # directory | file
    path: str | None = None  # absolute path where jobs read it
    source_uri: str | None = None  # defaults to file://<path>
    description: str = ""
    license: str = ""
    parent: str | None = None  # [project/]name@version of the version it was made from
    made_by_run: str | None = None  # the run that made it
    made_by_command: str | None = None  # or the command that made it


class DatasetService:
    def __init__(self, store: DatasetStore, access: AccessStore, runs: RunStore) -> None:
        self.store = store
        self.access = access
        self.runs = runs

    # -- registering ------------------------------------------------------------------------

    def register(self, req: Registration, *, principal: Principal) -> tuple[DatasetVersion, bool]:
        """Record a version (or find the one with the same content); returns it and whether it is new."""
        if not names.NAME.fullmatch(req.name):
            raise SpecError([SpecIssue("name", f"not a valid dataset name; use {names.NAME_HELP}", req.name)])
        if principal.role(req.project) is None and not principal.is_admin:
            try:
                shared = self.get(req.project, req.name, principal=principal)
            except NotFound:
                shared = None
            if shared is not None:
                raise Forbidden(
                    f"dataset {req.project}/{req.name} is shared with your project read-only; "
                    f"only members of {req.project} register its versions"
                )
        self._project(req.project, principal)
        require(principal, "dataset.register", req.project)
        entries = _checked_entries(req)
        if req.path is not None and (not req.path.startswith("/") or names.CONTROL_CHARS.search(req.path)):
            raise SpecError(
                [SpecIssue("path", "must be an absolute path without control characters", req.path)]
            )
        for key in ("description", "license", "made_by_command", "source_uri"):
            value = getattr(req, key)
            if value is not None and len(value) > MAX_TEXT:
                raise SpecError([SpecIssue(key, f"is {len(value)} characters; at most {MAX_TEXT}")])
        if req.source_uri is None and req.path is None:
            raise SpecError([SpecIssue("path", "give the path jobs read the dataset from, or a source_uri")])
        parent_id = None
        if req.parent is not None:
            parent_id = self.resolve(req.parent, project=req.project, principal=principal).id
        if req.made_by_run is not None:
            run = self.runs.get_run(req.made_by_run)
            if not allowed(principal, "run.read", run.project):
                raise NotFound(f"no run {req.made_by_run!r}")
        digest = manifest_digest(entries)
        return self.store.register(
            project=req.project,
            name=req.name,
            entries=entries,
            digest=digest,
            version=NewVersion(
                kind=req.kind,
                path=req.path,
                source_uri=req.source_uri or f"file://{req.path}",
                description=req.description,
                license=req.license,
                registered_by=principal.user,
                parent_id=parent_id,
                made_by_run_id=req.made_by_run,
                made_by_command=req.made_by_command,
            ),
            audit=AuditEntry(
                actor=principal.user,
                action="dataset.register",
                target_type="dataset_version",
                target_id="",
                project=req.project,
                source=principal.source,
            ),
        )

    def share(self, project: str, name: str, with_project: str, *, principal: Principal, on: bool) -> Dataset:
        """Let ``with_project`` read ``project/name`` (``on``), or stop it."""
        dataset = self.get(project, name, principal=principal)
        require(principal, "dataset.share", project)
        if with_project == project:
            raise SpecError(
                [SpecIssue("project", "a dataset is always readable by its own project", with_project)]
            )
        self._project(with_project, principal, must_see=False)
        audit = AuditEntry(
            actor=principal.user,
            action="dataset.share" if on else "dataset.unshare",
            target_type="dataset",
            target_id=dataset.id,
            project=project,
            source=principal.source,
            after={"dataset": f"{project}/{name}", "project": with_project},
        )
        if on:
            self.store.share(dataset.id, with_project, by=principal.user, audit=audit)
        else:
            self.store.unshare(dataset.id, with_project, audit=audit)
        return self.store.dataset(project, name)

    # -- reading ----------------------------------------------------------------------------

    def list(self, *, principal: Principal, project: str | None = None) -> list[Dataset]:
        """Datasets the caller may read (their projects' own and those shared with them)."""
        visible = visible_projects(principal)
        if project is not None:
            if visible is not None and project not in visible:
                return []
            visible = [project]
        return self.store.datasets(visible)

    def get(self, project: str, name: str, *, principal: Principal) -> Dataset:
        """The dataset ``project/name``; NotFound when there is none or the caller may not read it."""
        try:
            dataset = self.store.dataset(project, name)
        except NotFound:
            raise NotFound(f"no dataset {project}/{name}") from None
        if not self.readable(dataset, principal):
            raise NotFound(f"no dataset {project}/{name}")
        return dataset

    def versions(self, project: str, name: str, *, principal: Principal) -> builtins.list[DatasetVersion]:
        """Every version of ``project/name``, oldest first; NotFound as ``get``."""
        return self.store.versions(self.get(project, name, principal=principal).id)

    def version(self, project: str, name: str, selector: str, *, principal: Principal) -> DatasetVersion:
        """``selector``: latest, a number (3 or v3) or sha256:<hex prefix>."""
        return self.resolve(f"{project}/{name}@{selector}", project=project, principal=principal)

    def version_by_id(self, version_id: str, *, principal: Principal) -> DatasetVersion:
        """The version with id ``version_id``; NotFound when there is none or the caller may not
        read its dataset.
        """
        version = self.store.version(version_id)
        self.get(version.project, version.name, principal=principal)
        return version

    def files(self, version: DatasetVersion) -> builtins.list[FileEntry]:
        """The manifest of ``version``: every file, sorted by path (the caller may read ``version``)."""
        return self.store.files(version.id)

    def diff(
        self, project: str, name: str, old: str, new: str, *, principal: Principal
    ) -> tuple[DatasetVersion, DatasetVersion, ManifestDiff]:
        """Versions ``old`` and ``new`` of ``project/name`` (selectors as ``version``) and what changed
        between their manifests. SpecError or NotFound as ``version``.
        """
        a = self.version(project, name, old, principal=principal)
        b = self.version(project, name, new, principal=principal)
        return a, b, diff_manifests(self.store.files(a.id), self.store.files(b.id))

    def parents(self, version: DatasetVersion, limit: int = 50) -> builtins.list[DatasetVersion]:
        """The chain of parent versions, nearest first (the caller may read ``version``)."""
        chain: builtins.list[DatasetVersion] = []
        seen = {version.id}
        current = version
        while current.parent_id and current.parent_id not in seen and len(chain) < limit:
            current = self.store.version(current.parent_id)
            seen.add(current.id)
            chain.append(current)
        return chain

    def readable(self, dataset: Dataset, principal: Principal) -> bool:
        """True when ``principal`` may read ``dataset``: in its project or in one it is shared with."""
        return allowed(principal, "dataset.read", dataset.project) or any(
            allowed(principal, "dataset.read", p) for p in dataset.shared_with
        )

    def resolve(
        self, text: str, *, project: str, principal: Principal, for_project: str | None = None
    ) -> DatasetVersion:
        """The version a reference names, for ``principal`` (and, with ``for_project``, usable by that
        project's runs: its own datasets and those shared with it).

        ``project`` is the default for a reference without one. Raises
        SpecError for a malformed reference, NotFound for one the caller
        cannot see, Forbidden when ``for_project`` may not use it.
        """
        try:
            ref: DatasetRef = parse_dataset_ref(text)
        except ValueError as exc:
            raise SpecError([SpecIssue("datasets", str(exc), text)]) from exc
        owner = ref.project or project
        dataset = self.get(owner, ref.name, principal=principal)
        if for_project is not None and owner != for_project and for_project not in dataset.shared_with:
            raise Forbidden(
                f"project {for_project} may not use dataset {owner}/{ref.name}: it is not shared with it "
                f"(a lead of {owner} can share it: gw dataset share {owner}/{ref.name} --with {for_project})"
            )
        return self.store.find_version(dataset.id, number=ref.number, digest_prefix=ref.digest_prefix)

    def _project(self, project: str, principal: Principal, *, must_see: bool = True) -> None:
        if must_see and principal.role(project) is None and not principal.is_admin:
            raise NotFound(f"no project {project!r} that {principal.user} is a member of")
        try:
            self.access.project(project)
        except NotFound:
            raise NotFound(f"no project {project!r}") from None


def _checked_entries(req: Registration) -> list[FileEntry]:
    if req.kind not in ("directory", "file"):
        raise SpecError([SpecIssue("kind", "must be 'directory' or 'file'", req.kind)])
    try:
        entries = check_entries(req.files)
    except ValueError as exc:
        raise SpecError([SpecIssue("files", str(exc))]) from exc
    if req.kind == "file" and len(entries) != 1:
        raise SpecError([SpecIssue("files", f"a file dataset has exactly one entry, not {len(entries)}")])
    for entry in entries:
        try:
            entry.path.encode("utf-8")
        except UnicodeEncodeError:
            raise SpecError(
                [
                    SpecIssue(
                        "files",
                        "a file name is not valid UTF-8; rename it to register the dataset",
                        entry.path,
                    )
                ]
            ) from None
    return entries
