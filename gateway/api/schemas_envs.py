"""Schemas of training environments: versions, registrations, diffs and a run's environment."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.api.schemas_catalog import CatalogEntryPublic
from gateway.core.described import documented
from gateway.core.envs.lockfile import MAX_LOCK_CHARS
from gateway.core.envs.record import Environment, EnvVersion
from gateway.core.spec.lineage import DATASET_REF_PATTERN
from gateway.core.spec.parts import MODULE_NAME
from gateway.services.envs.observed import RunEnvironment
from gateway.services.envs.registry import EnvDiff, ScanReport


class EnvVersionCreate(BaseModel):
    """A version to register. ``python``: ``lock`` and ``build_queue``; ``image``: ``archive``;
    ``modules``: ``modules``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["python", "image", "modules"]
    lock: str | None = Field(
        default=None,
        max_length=MAX_LOCK_CHARS,
        description="python: the lock file's text (name==version --hash=sha256:... on every requirement)",
    )
    build_queue: Annotated[str, documented(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")] | None = Field(
        default=None, description="python: the project's queue the build job runs in"
    )
    archive: str | None = Field(
        default=None, max_length=1024, description="image: absolute path of a `podman save` archive"
    )
    modules: list[Annotated[str, documented(pattern=f"^{MODULE_NAME.pattern}$")]] = Field(
        default_factory=list, max_length=64, description="modules: names (name/version), loaded in order"
    )
    description: str = Field(default="", max_length=4096)
    parent: Annotated[str, documented(pattern=f"^(?:{DATASET_REF_PATTERN})$")] | None = Field(
        default=None, max_length=256, description="The version it derives from; default the latest"
    )


class EnvBuildFailurePublic(BaseModel):
    attempt: int = Field(description="which build (1 the first)")
    failure: str | None = Field(description="why it failed")
    build_run_id: str | None = Field(description="its build run (none: its job was never submitted)")


class EnvVersionPublic(BaseModel):
    id: str
    environment: str = Field(description="project/name")
    ref: str = Field(description="project/name@version")
    project: str
    name: str
    version: int
    kind: str
    digest: str = Field(description="sha256 over the kind and content (lock, image id or module list)")
    status: str = Field(description="building, ready or failed (python); ready otherwise")
    location: str | None = Field(description="python: the venv; image: the archive")
    image_id: str | None
    modules: list[str]
    locked: dict[str, str] = Field(description="python: what the lock pins, name -> version")
    packages_sha256: str | None = Field(description="python: sha256 of the installed set, once built")
    package_count: int
    build_run_id: str | None
    failure: str | None
    build_attempts: int = Field(
        default=1, description="python: builds asked for (a failed site build is tried again, bounded)"
    )
    build_failures: list[EnvBuildFailurePublic] = Field(
        default_factory=list, description="python: why each earlier build failed, oldest first"
    )
    description: str
    registered_by: str
    registered_at: datetime
    parent_id: str | None
    parent_diff: dict[str, Any] | None = Field(description="The dependency change from the parent")

    @classmethod
    def of(cls, v: EnvVersion) -> EnvVersionPublic:
        return cls(
            id=v.id,
            environment=f"{v.project}/{v.name}",
            ref=v.ref,
            project=v.project,
            name=v.name,
            version=v.number,
            kind=v.kind,
            digest=v.digest,
            status=v.status,
            location=v.location,
            image_id=v.image_id,
            modules=v.modules,
            locked=dict(v.content.get("locked") or {}),
            packages_sha256=v.packages_sha256,
            package_count=len(v.packages),
            build_run_id=v.build_run_id,
            failure=v.failure,
            build_attempts=v.build_attempts,
            build_failures=[EnvBuildFailurePublic(**f) for f in v.build_failures],
            description=v.description,
            registered_by=v.registered_by,
            registered_at=v.registered_at,
            parent_id=v.parent_id,
            parent_diff=v.parent_diff,
        )


class EnvVersionRegistered(EnvVersionPublic):
    created: bool = Field(description="False: the environment already had a version with this content")


class EnvVersionDetail(EnvVersionPublic):
    packages: dict[str, str] = Field(description="The installed set (python, once built), name -> version")
    lock: str | None = Field(description="python: the lock file as registered")

    @classmethod
    def of_detail(cls, v: EnvVersion) -> EnvVersionDetail:
        return cls(**EnvVersionPublic.of(v).model_dump(), packages=v.packages, lock=v.content.get("lock"))


class EnvironmentPublic(CatalogEntryPublic):
    version_count: int
    latest: EnvVersionPublic | None

    @classmethod
    def of(cls, e: Environment) -> EnvironmentPublic:
        return cls(
            **cls.entry_fields(e),
            version_count=e.version_count,
            latest=EnvVersionPublic.of(e.latest) if e.latest else None,
        )


class EnvDiffPublic(BaseModel):
    old: str
    new: str
    old_kind: str
    new_kind: str
    added: list[dict[str, str]]
    removed: list[dict[str, str]]
    upgraded: list[dict[str, str]]
    downgraded: list[dict[str, str]]
    changed: list[dict[str, str]]
    unchanged: int
    image: dict[str, str | None] | None = Field(description="The image ids, when either side is an image")

    @classmethod
    def of(cls, d: EnvDiff) -> EnvDiffPublic:
        return cls(
            old=d.old, new=d.new, old_kind=d.old_kind, new_kind=d.new_kind, image=d.image, **d.packages
        )


class FindingPublic(BaseModel):
    package: str
    version: str
    advisory: str = Field(description="The OSV id")
    severity: str = Field(description="UNKNOWN, LOW, MODERATE, HIGH or CRITICAL")
    summary: str
    fixed: list[str] = Field(description="Versions that fix it")
    aliases: list[str]


class ScanPublic(BaseModel):
    ref: str
    scanned: int = Field(description="Packages checked (a python version's installed set, or its lock)")
    source: str | None = Field(description="The advisory directory; null: the site keeps none")
    advisories: int = Field(description="Advisories in it")
    worst: str | None
    findings: list[FindingPublic]
    problems: list[str] = Field(description="Files of the directory that could not be read")

    @classmethod
    def of(cls, r: ScanReport) -> ScanPublic:
        return cls(
            ref=r.version.ref,
            scanned=r.scanned,
            source=r.source,
            advisories=r.advisories,
            worst=r.worst,
            findings=[FindingPublic(**f.to_dict()) for f in r.findings],
            problems=r.problems[:50],
        )


class EnvObservationPublic(BaseModel):
    job_id: str
    version_id: str
    observed: dict[str, Any] = Field(description="What the job found: image_id, or python and packages")
    drift: dict[str, Any] | None = Field(description="How that differs from the version; null: none")


class RunEnvironmentPublic(BaseModel):
    run_id: str
    record: dict[str, Any] | None = Field(description="The run's environment record at submission")
    version: EnvVersionPublic | None
    observations: list[EnvObservationPublic]
    warnings: list[str] = Field(
        description="The build the run waits for (or that failed under it), then drift in words, one line "
        "per job"
    )
    findings: list[FindingPublic] = Field(description="Known advisories in the version's packages")

    @classmethod
    def of(cls, r: RunEnvironment) -> RunEnvironmentPublic:
        return cls(
            run_id=r.run_id,
            record=r.record,
            version=EnvVersionPublic.of(r.version) if r.version else None,
            observations=[
                EnvObservationPublic(
                    job_id=o.job_id, version_id=o.version_id, observed=o.observed, drift=o.drift
                )
                for o in r.observations
            ],
            warnings=r.warnings,
            findings=[FindingPublic(**f.to_dict()) for f in r.findings],
        )
