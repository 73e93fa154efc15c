"""Datasets, their versions, a run's inputs and its artifacts as values (the lineage spine's records).

Plain frozen dataclasses; ORM rows never leave the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class DatasetVersion:
    """One immutable version of a dataset, identified by its manifest digest."""

    id: str
    dataset_id: str
    project: str  # the owning project
    name: str
    number: int  # 1, 2, ... in registration order within the dataset
    digest: str  # sha256 over the manifest (gateway.core.lineage.manifest)
    kind: str  # directory | file
    path: str | None  # where jobs read it (absolute path on the cluster)
    source_uri: str
    file_count: int
    total_bytes: int
    description: str
    license: str
    registered_by: str
    registered_at: datetime
    parent_id: str | None = None
    made_by_run_id: str | None = None
    made_by_command: str | None = None

    @property
    def ref(self) -> str:
        """``project/name@number``: how people and specs name this version."""
        return f"{self.project}/{self.name}@{self.number}"


@dataclass(frozen=True)
class Dataset:
    id: str
    project: str
    name: str
    description: str
    created_by: str
    created_at: datetime
    shared_with: list[str] = field(default_factory=list)  # projects that may read it
    latest: DatasetVersion | None = None
    version_count: int = 0


@dataclass(frozen=True)
class RunInput:
    """A dataset version a run was submitted with, and the path its job was given."""

    position: int
    ref: str  # as the spec named it
    version: DatasetVersion
    path: str
    verify: str  # exists | digest
    env_var: str  # the job's variable holding the path


@dataclass(frozen=True)
class Artifact:
    """A file a run declared as output, as one attempt left it."""

    id: int
    run_id: str
    attempt_id: int
    attempt_number: int
    path: str  # relative to the run directory
    size_bytes: int
    sha256: str
    created_at: datetime
