"""One event of the audit log as a value: who did what to which target, and its place in the chain."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class AuditEvent:
    seq: int
    at: datetime
    actor: str
    action: str
    target_type: str
    target_id: str
    project: str | None
    source: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    prev_hash: str
    hash: str
