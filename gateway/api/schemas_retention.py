"""Request and response models of retention (``/retention/...``, docs/retention.md)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.core import names


class HoldCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target_type: Literal["run", "model", "project"] = Field(description="What is held")
    target_id: str = Field(
        min_length=1,
        max_length=160,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$",
        description="A run id, a model as PROJECT/NAME, or a project name",
    )
    reason: str = Field(min_length=1, max_length=1000, description="Why (audited)")


class HoldLift(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=1000, description="Why the hold is lifted (audited)")


class HoldPublic(BaseModel):
    id: str
    target_type: str
    target_id: str
    project: str
    reason: str
    created_by: str
    created_at: datetime
    lifted_at: datetime | None = None
    lifted_by: str | None = None
    lift_reason: str | None = None

    @classmethod
    def of(cls, hold: Any) -> HoldPublic:
        return cls(**asdict(hold))


class SweepItemPublic(BaseModel):
    run_id: str
    project: str
    path: str = Field(description="Relative to the run directory; '.' is the directory itself")
    kind: str = Field(description="file or dir")
    rule: str = Field(description="logs, outputs, failed-runs or member-left")
    size_bytes: int
    sha256: str | None = Field(
        description="A file's sha256, a directory's listing digest (null in a dry run)"
    )
    outcome: str = Field(
        description="would delete, deleted, finished (a dead pass's), pending (a dead pass's, in a dry run), "
        "failed, absent"
    )
    note: str | None = None


class KeptPublic(BaseModel):
    run_id: str
    reason: str = Field(description="The hold, or what release needs it")


class SweepPublic(BaseModel):
    sweep_id: str
    at: datetime = Field(description="The time the pass planned for (its clock, or as_of in a dry run)")
    dry_run: bool
    freed_bytes: int = Field(description="What it deleted (a dry run: would delete)")
    items: list[SweepItemPublic]
    kept: list[KeptPublic]
    problems: list[str]

    @classmethod
    def of(cls, report: Any) -> SweepPublic:
        return cls(
            sweep_id=report.sweep_id,
            at=report.at,
            dry_run=report.dry_run,
            freed_bytes=report.freed_bytes,
            items=[SweepItemPublic(**asdict(i)) for i in report.items],
            kept=[KeptPublic(**asdict(k)) for k in report.kept],
            problems=report.problems,
        )


class StorageRowPublic(BaseModel):
    key: str = Field(description="The project, PROJECT/USER or the run id")
    project: str
    user: str | None
    run_id: str | None
    size_bytes: int
    files: int
    runs: int
    freeable_bytes: int = Field(description="What the next sweep would delete of it")
    measured_at: datetime | None


class ProjectSpacePublic(BaseModel):
    project: str
    size_bytes: int | None = Field(description="null: never measured")
    limit_bytes: int | None
    warn_bytes: int | None
    freeable_bytes: int
    growth_bytes: int | None = Field(description="Change over the last 30 days of measurements")
    status: str = Field(description="unmeasured, unlimited, ok, warn or over")
    warning: str | None


class StorageSamplePublic(BaseModel):
    project: str
    at: datetime
    size_bytes: int
    runs: int


class DeparturePublic(BaseModel):
    project: str
    user: str
    left_at: datetime
    action: str = Field(description="keep, lead or expire (the project's on_member_leave then)")
    steward: str | None = Field(description="With lead: the lead who answers for their runs' files")


class StoragePublic(BaseModel):
    by: str
    rows: list[StorageRowPublic]
    projects: list[ProjectSpacePublic]
    samples: list[StorageSamplePublic] = Field(description="Each project's total at each measurement")
    departures: list[DeparturePublic] = Field(description="Members who left, and what became of their files")

    @classmethod
    def of(cls, report: Any) -> StoragePublic:
        return cls(
            by=report.by,
            rows=[StorageRowPublic(**asdict(r)) for r in report.rows],
            projects=[ProjectSpacePublic(**asdict(p)) for p in report.projects],
            samples=[StorageSamplePublic(**asdict(s)) for s in report.samples],
            departures=[DeparturePublic(**asdict(d)) for d in report.departures],
        )


class DeletionPublic(BaseModel):
    id: int
    run_id: str
    project: str
    rule: str
    rel_path: str
    kind: str
    size_bytes: int
    files: int
    sha256: str | None
    state: str = Field(description="intent (a pass is on it, or died: the next finishes it), done, failed")
    planned_at: datetime
    done_at: datetime | None
    note: str | None
    words: str | None = Field(description="'files expired on DATE by rule R' for a done deletion")


PROJECT_PATTERN = f"^{names.NAME.pattern}$"
