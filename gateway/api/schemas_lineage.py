"""API schemas of datasets, run outputs, lineage traces and run comparison."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.api.schemas_catalog import CatalogEntryPublic
from gateway.api.schemas_telemetry import GpuUsePublic
from gateway.core.described import ABSOLUTE_LINE, documented
from gateway.core.lineage.manifest import (
    MANIFEST_PATH_PATTERN,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_PATH_CHARS,
    FileEntry,
    ManifestDiff,
)
from gateway.core.lineage.values import Dataset, DatasetVersion
from gateway.core.spec.lineage import DATASET_REF_PATTERN
from gateway.services.lineage.walk import version_dict


class FileEntryPublic(BaseModel):
    path: str = Field(
        description="Relative to the dataset's root, '/'-separated",
        json_schema_extra={"pattern": MANIFEST_PATH_PATTERN, "maxLength": MAX_PATH_CHARS},
    )
    size: int = Field(ge=0, le=MAX_FILE_BYTES, description="Bytes")
    sha256: str = Field(pattern="^[0-9a-fA-F]{64}$")

    @classmethod
    def of(cls, entry: FileEntry) -> FileEntryPublic:
        return cls(path=entry.path, size=entry.size, sha256=entry.sha256)


class DatasetVersionCreate(BaseModel):
    """A version to register: the manifest of its files (``gw dataset register`` computes it)."""

    model_config = ConfigDict(extra="forbid")

    files: list[FileEntryPublic] = Field(
        max_length=MAX_FILES, description="Every regular file of the dataset"
    )
    kind: Literal["directory", "file"] = "directory"
    path: Annotated[str, documented(pattern=ABSOLUTE_LINE)] | None = Field(
        default=None, max_length=4096, description="Absolute path jobs read it from"
    )
    source_uri: str | None = Field(
        default=None, max_length=4096, description="Where it came from; default file://<path>"
    )
    description: str = Field(default="", max_length=65536)
    license: str = Field(default="", max_length=65536, description="Licence or usage terms")
    parent: Annotated[str, documented(pattern=f"^(?:{DATASET_REF_PATTERN})$")] | None = Field(
        default=None, max_length=256, description="The version it was made from: [project/]name@version"
    )
    made_by_run: str | None = Field(default=None, max_length=64, description="The run that made it")
    made_by_command: str | None = Field(
        default=None, max_length=65536, description="Or the command that made it"
    )


class DatasetVersionPublic(BaseModel):
    id: str
    dataset: str = Field(description="project/name")
    project: str
    name: str
    version: int
    digest: str = Field(description="sha256 over the manifest (`sha256sum` lines of every file, by name)")
    kind: str
    path: str | None
    source_uri: str
    file_count: int
    total_bytes: int
    description: str
    license: str
    registered_by: str
    registered_at: datetime
    parent_id: str | None
    made_by_run_id: str | None
    made_by_command: str | None

    @classmethod
    def of(cls, version: DatasetVersion) -> DatasetVersionPublic:
        return cls(**version_dict(version))


class DatasetVersionRegistered(DatasetVersionPublic):
    created: bool = Field(description="False: the dataset already had a version with this content")


class DatasetVersionDetail(DatasetVersionPublic):
    files: list[FileEntryPublic] | None = Field(default=None, description="The manifest, when asked for")


class DatasetPublic(CatalogEntryPublic):
    shared_with: list[str] = Field(description="Projects that may read it and use it in runs")
    version_count: int
    latest: DatasetVersionPublic | None

    @classmethod
    def of(cls, dataset: Dataset) -> DatasetPublic:
        return cls(
            **cls.entry_fields(dataset),
            shared_with=list(dataset.shared_with),
            version_count=dataset.version_count,
            latest=DatasetVersionPublic.of(dataset.latest) if dataset.latest else None,
        )


class FileChangePublic(BaseModel):
    path: str
    a: FileEntryPublic
    b: FileEntryPublic


class DatasetDiffPublic(BaseModel):
    a: DatasetVersionPublic
    b: DatasetVersionPublic
    added: list[FileEntryPublic]
    removed: list[FileEntryPublic]
    changed: list[FileChangePublic]
    unchanged: int

    @classmethod
    def of(cls, a: DatasetVersion, b: DatasetVersion, diff: ManifestDiff) -> DatasetDiffPublic:
        return cls(
            a=DatasetVersionPublic.of(a),
            b=DatasetVersionPublic.of(b),
            added=[FileEntryPublic.of(e) for e in diff.added],
            removed=[FileEntryPublic.of(e) for e in diff.removed],
            changed=[
                FileChangePublic(path=new.path, a=FileEntryPublic.of(old), b=FileEntryPublic.of(new))
                for old, new in diff.changed
            ],
            unchanged=diff.unchanged,
        )


class ArtifactPublic(BaseModel):
    run_id: str
    attempt: int
    job_id: str | None
    path: str = Field(description="Relative to the run directory")
    abs_path: str
    size: int
    sha256: str
    created_at: datetime


class HarvestPublic(BaseModel):
    attempt: int
    at: datetime | None = Field(description="When its outputs were registered; null: not yet")
    note: str | None = Field(description="What was skipped or not found")


class RunOutputsPublic(BaseModel):
    run_id: str
    artifacts: list[ArtifactPublic]
    metrics: dict[str, float] = Field(description="Summary metrics (the latest attempt's)")
    series: dict[str, list[tuple[int | None, float]]] = Field(description="Per-step values: [step, value]")
    harvests: list[HarvestPublic]


class LineageInputPublic(BaseModel):
    ref: str = Field(description="As the spec named it (a registered version, or a plain path)")
    path: str
    verify: str
    env_var: str | None
    version: DatasetVersionPublic | None = Field(description="null for a plain path")
    parents: list[DatasetVersionPublic] = Field(description="The version's parents, nearest first")


class LineageAttemptPublic(BaseModel):
    number: int
    job_id: str | None
    state: str
    node_list: str | None
    start_time: datetime | None
    end_time: datetime | None
    exit_code: int | None
    failure_class: str | None
    gpu: GpuUsePublic | None = Field(
        default=None,
        description="Its GPU telemetry in brief (GET /runs/{id}/telemetry); null: none harvested",
    )


class TemplateRefPublic(BaseModel):
    name: str
    version: str


class LineageRunPublic(BaseModel):
    id: str
    name: str
    project: str
    queue: str
    submitter: str
    state: str
    created_at: datetime
    parent_run_id: str | None
    spec_sha256: str
    script_sha256: str
    template: TemplateRefPublic
    script: str = Field(description="The rendered sbatch script, exactly as submitted")
    params: dict[str, Any]
    code: dict[str, Any] | None = Field(description="git repo, commit, branch, dirty, diff_sha256")
    environment: dict[str, Any] | None = Field(
        description="container image and digest, venv packages, modules"
    )
    environment_record: dict[str, Any] | None = Field(
        None,
        description="The registered environment version the run named (null: none): ref, digest, status, "
        "installed packages and their sha256, what each job found at its start with its drift, warnings, "
        "and the site's advisory scan (source, packages checked, findings)",
    )
    datasets: list[LineageInputPublic]
    attempts: list[LineageAttemptPublic]
    artifacts: list[ArtifactPublic]
    metrics: dict[str, float]


class ArtifactLineagePublic(BaseModel):
    artifact: ArtifactPublic
    run: LineageRunPublic


class DatasetFilePublic(BaseModel):
    path: str
    version: DatasetVersionPublic


class ArtifactTracePublic(BaseModel):
    sha256: str
    artifacts: list[ArtifactLineagePublic] = Field(
        description="Every artifact with this content, with its run"
    )
    dataset_files: list[DatasetFilePublic] = Field(description="Dataset versions holding a file with it")


class UsingRunPublic(BaseModel):
    id: str
    name: str
    project: str
    state: str
    submitter: str
    created_at: datetime
    artifacts: list[ArtifactPublic]


class DatasetTracePublic(BaseModel):
    version: DatasetVersionPublic
    parents: list[DatasetVersionPublic]
    children: list[DatasetVersionPublic] = Field(description="Versions made from this one")
    runs: list[UsingRunPublic] = Field(
        description="The runs that read it that the caller may read, with what they wrote (others uncounted)"
    )


class ParamChangePublic(BaseModel):
    key: str
    a: Any
    b: Any


class DatasetChangePublic(BaseModel):
    name: str
    a: str | None
    b: str | None
    same: bool


class MetricPairPublic(BaseModel):
    name: str
    a: float | str
    b: float | str
    delta: float | None


class SidePairPublic(BaseModel):
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    same: bool


class ComparePublic(BaseModel):
    runs: list[str]
    params: list[ParamChangePublic] = Field(description='Differing params; "(absent)" where a run lacks one')
    datasets: list[DatasetChangePublic]
    metrics: list[MetricPairPublic]
    code: SidePairPublic
    environment: SidePairPublic
