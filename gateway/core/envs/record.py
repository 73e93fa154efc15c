"""An environment version: its kind, what it holds, its content digest, and what a job is given.

Kinds (docs/environments.md):

- ``python``: a locked Python environment. The lock file is the content; a Slurm job builds it
  once into a venv on the shared file system, and its installed set (``name==version`` of every
  distribution) is recorded and hashed when that job ends.
- ``image``: an OCI image by its id (``sha256:`` of its config), loaded from an archive on the
  shared file system (``podman save``) into the job user's image store when missing, and run by the
  site's container runtime.
- ``modules``: Lmod / Environment Modules names and versions, loaded in order; recorded as given.

A version is immutable once registered: its digest is over its kind and content
(``content_digest``); only a python version's build status moves from ``building`` to ``ready``
(with the installed set) or ``failed``; a failed build of a site environment may be tried again
(back to ``building``, a bounded number of times, each earlier failure kept in ``build_failures``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

KINDS = ("python", "image", "modules")
# The site's own environments (the built-in eval environment, ``site/lm-eval@N``): every user reads
# them and any run may name them; a project of this name cannot own environments of its own.
SITE_PROJECT = "site"
STATUSES = ("building", "ready", "failed")


def content_digest(kind: str, content: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of ``{"kind": kind, **content}``: a version's identity."""
    canonical = json.dumps({"kind": kind, **content}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def packages_sha256(packages: Mapping[str, str]) -> str:
    """sha256 (hex) of the sorted lines ``name==version\\n``: the run host's ``python_env`` hash."""
    return hashlib.sha256("".join(sorted(f"{n}=={v}\n" for n, v in packages.items())).encode()).hexdigest()


@dataclass(frozen=True)
class EnvVersion:
    """One immutable version of a project's environment."""

    id: str
    environment_id: str
    project: str
    name: str
    number: int
    kind: str  # python | image | modules
    digest: str  # content_digest(kind, content)
    content: dict[str, Any]  # python: lock, lock_sha256; image: image_id, archive, tags; modules: modules
    status: str  # building | ready | failed
    registered_by: str
    registered_at: datetime
    description: str = ""
    location: str | None = None  # python: the venv's directory; image: the archive
    packages: dict[str, str] = field(default_factory=dict)  # the installed set (python: once built)
    packages_sha256: str | None = None
    build_run_id: str | None = None  # python: the Slurm job that builds it
    failure: str | None = None  # why the build failed
    parent_id: str | None = None  # the version it was derived from
    parent_diff: dict[str, Any] | None = None  # package_diff(parent, this), when both have packages
    build_attempts: int = 1  # python: builds asked for (a failed site build is retried, bounded)
    build_requested_at: datetime | None = None  # python: when the current build was asked for
    build_failures: list[dict[str, Any]] = field(default_factory=list)  # earlier builds' failures

    @property
    def build_tag(self) -> str:
        """The tag of the current build's run: how a build whose registering request died before it
        linked its run (``build_run_id``) is found again."""
        return f"env-build:{self.id}:{self.build_attempts}"

    @property
    def ref(self) -> str:
        """``project/name@number``: how people and specs name this version."""
        return f"{self.project}/{self.name}@{self.number}"

    @property
    def image_id(self) -> str | None:
        """An image version's ``sha256:`` image id; None for other kinds."""
        return self.content.get("image_id") if self.kind == "image" else None

    @property
    def modules(self) -> list[str]:
        """A modules version's modules, in load order; empty for other kinds."""
        return list(self.content.get("modules", [])) if self.kind == "modules" else []


@dataclass(frozen=True)
class Environment:
    id: str
    project: str
    name: str
    description: str
    created_by: str
    created_at: datetime
    latest: EnvVersion | None = None
    version_count: int = 0


@dataclass(frozen=True)
class EnvLaunch:
    """What a run's job is given to run in its environment (the renderer's input)."""

    ref: str  # project/name@number, pinned at submission
    kind: str
    digest: str
    version_id: str = ""
    venv: str | None = None  # python: activate it
    modules: tuple[str, ...] = ()  # modules: load them in order
    image_id: str | None = None  # image: sha256:<hex>, run with the runtime
    archive: str | None = None  # image: where to load it from when the user's store lacks it
    runtime: str = "podman"
    observe_file: str = "environment"  # the job writes <run_dir>/<observe_file>-<job id>.json

    def record(self) -> dict[str, Any]:
        """The run's ``environment`` record: what it named and what that was."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "ref": self.ref,
            "digest": self.digest,
            "version_id": self.version_id,
        }
        if self.venv:
            out["venv"] = self.venv
        if self.modules:
            out["modules"] = list(self.modules)
        if self.image_id:
            out.update(image_id=self.image_id, archive=self.archive, runtime=self.runtime)
        return out


def launch_of(version: EnvVersion, *, runtime: str = "podman") -> EnvLaunch:
    """The launch of a usable version (a python one must be ``ready``: the caller checks)."""
    return EnvLaunch(
        ref=version.ref,
        kind=version.kind,
        digest=version.digest,
        version_id=version.id,
        venv=version.location if version.kind == "python" else None,
        modules=tuple(version.modules),
        image_id=version.image_id,
        archive=version.location if version.kind == "image" else None,
        runtime=runtime,
    )
