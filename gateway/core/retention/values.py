"""Retention's values as the store hands them out: holds, deletions, measured sizes, departures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

HoldTarget = Literal["run", "model", "project"]
HOLD_TARGETS: tuple[HoldTarget, ...] = ("run", "model", "project")


@dataclass(frozen=True)
class Hold:
    id: str
    target_type: str  # run | model | project
    target_id: str
    project: str
    reason: str
    created_by: str
    created_at: datetime
    lifted_at: datetime | None = None
    lifted_by: str | None = None
    lift_reason: str | None = None

    @property
    def active(self) -> bool:
        """Not lifted."""
        return self.lifted_at is None

    def words(self) -> str:
        """How a kept run names it: "hold h-... on project p by lead: reason"."""
        return f"hold {self.id} on {self.target_type} {self.target_id} by {self.created_by}: {self.reason}"


@dataclass(frozen=True)
class DeletionRecord:
    """A deletion as recorded: its intent (size and digest measured before), and how it ended."""

    id: int
    run_id: str
    project: str
    rule: str
    rel_path: str
    kind: str
    run_dir: str
    os_user: str
    size_bytes: int
    files: int
    sha256: str | None
    state: str  # intent | done | failed
    sweep_id: str
    planned_at: datetime
    done_at: datetime | None = None
    note: str | None = None


@dataclass(frozen=True)
class RunStorage:
    run_id: str
    project: str
    submitter: str
    run_dir: str
    size_bytes: int
    files: int
    freeable_bytes: int
    measured_at: datetime
    error: str | None = None


@dataclass(frozen=True)
class StorageSample:
    project: str
    at: datetime
    size_bytes: int
    runs: int


@dataclass(frozen=True)
class Departure:
    project: str
    user: str
    left_at: datetime
    action: str  # keep | lead | expire
    steward: str | None = None
