"""An audit event before it is chained (``AuditEntry``), and the hash that chains it (pure).

The store appends entries to the log (``gateway/store/audit/audit.py``); services
fill them in. ``event_hash`` is the one definition of the chain's hash, used
when an event is appended and when the chain is verified.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.core.audit.event import AuditEvent


@dataclass(frozen=True)
class AuditEntry:
    """What happened, before it is chained: the caller fills this in."""

    actor: str
    action: str  # e.g. run.submit, run.cancel, project.change, user.add, token.issue, slurm.add_account
    target_type: str
    target_id: str
    project: str | None = None
    source: str | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


def event_hash(prev_hash: str, seq: int, at: datetime, entry: AuditEntry | AuditEvent) -> str:
    """The hash chaining an event onto ``prev_hash``: sha256 of ``prev_hash`` and the event's canonical
    JSON (seq, at, actor, action, target, project, source, before, after).
    """
    body = {
        "seq": seq,
        "at": at.isoformat(),
        "actor": entry.actor,
        "action": entry.action,
        "target_type": entry.target_type,
        "target_id": entry.target_id,
        "project": entry.project,
        "source": entry.source,
        "before": entry.before,
        "after": entry.after,
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256((prev_hash + canonical).encode()).hexdigest()
