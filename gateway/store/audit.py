"""The append-only, hash-chained audit log.

Each event's ``hash`` is sha256 over the previous event's hash and this
event's canonical JSON. ``append`` first bumps the single ``audit_head`` row,
which takes the write lock (SQLite) or the row lock (PostgreSQL), so two
appends can never chain onto the same predecessor. ``verify`` recomputes the
chain and names the first event that was edited, and any sequence number
that is missing (a deleted event).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.orm import Session

from gateway.domain import AuditEvent
from gateway.store.db import Database
from gateway.store.models import AuditHeadRow, AuditRow, utcnow

AUDIT = AuditRow.__table__
HEAD = AuditHeadRow.__table__
GENESIS = "0" * 64

_BUMP_HEAD = update(HEAD).where(HEAD.c.id == 1).values(seq=HEAD.c.seq + 1).returning(HEAD.c.seq, HEAD.c.hash)
_SET_HEAD_HASH = update(HEAD).where(HEAD.c.id == 1).values(hash=bindparam("new_hash"))
_INSERT = insert(AUDIT)


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


def append(conn: Session | Connection, entry: AuditEntry) -> int:
    """Chain ``entry`` onto the log inside the caller's transaction; returns its sequence number."""
    seq, prev_hash = conn.execute(_BUMP_HEAD).one()
    # Microseconds survive both databases; the hash must match what verify() reads back.
    at = utcnow()
    digest = event_hash(prev_hash, seq, at, entry)
    conn.execute(
        _INSERT,
        {
            "seq": seq,
            "at": at,
            "actor": entry.actor,
            "action": entry.action,
            "target_type": entry.target_type,
            "target_id": entry.target_id,
            "project": entry.project,
            "source": entry.source,
            "before": entry.before,
            "after": entry.after,
            "prev_hash": prev_hash,
            "hash": digest,
        },
    )
    conn.execute(_SET_HEAD_HASH, {"new_hash": digest})
    return seq


@dataclass(frozen=True)
class AuditProblem:
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"event {self.seq}: {self.problem}"


class AuditStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, entry: AuditEntry) -> int:
        with self.db.transaction() as conn:
            return append(conn, entry)

    def events(
        self,
        *,
        projects: Sequence[str] | None = None,
        actor: str | None = None,
        action: str | None = None,
        target_id: str | None = None,
        after_seq: int | None = None,
        limit: int = 100,
    ) -> list[AuditEvent]:
        """Events in order; ``projects`` limits to those projects (None: all)."""
        query = select(AuditRow).order_by(AuditRow.seq).limit(limit)
        if projects is not None:
            query = query.where(AuditRow.project.in_(list(projects)))
        if actor:
            query = query.where(AuditRow.actor == actor)
        if action:
            query = query.where(AuditRow.action == action)
        if target_id:
            query = query.where(AuditRow.target_id == target_id)
        if after_seq is not None:
            query = query.where(AuditRow.seq > after_seq)
        with self.db.session() as session:
            return [_event(r) for r in session.scalars(query)]

    def verify(self) -> list[AuditProblem]:
        """Recompute the chain; report edited events and missing sequence numbers."""
        problems: list[AuditProblem] = []
        prev_hash, expected = GENESIS, 1
        with self.db.session() as session:
            head_seq, head_hash = session.execute(select(HEAD.c.seq, HEAD.c.hash).where(HEAD.c.id == 1)).one()
            for row in session.scalars(select(AuditRow).order_by(AuditRow.seq)).yield_per(1000):
                event = _event(row)
                while expected < event.seq:
                    problems.append(AuditProblem(expected, "missing (deleted?)"))
                    expected += 1
                if event.prev_hash != prev_hash:
                    problems.append(AuditProblem(event.seq, "does not chain onto the event before it"))
                if event_hash(event.prev_hash, event.seq, event.at, event) != event.hash:
                    problems.append(
                        AuditProblem(event.seq, "was edited: its hash does not match its content")
                    )
                prev_hash, expected = event.hash, event.seq + 1
        while expected <= head_seq:
            problems.append(AuditProblem(expected, "missing (deleted?)"))
            expected += 1
        if not problems and prev_hash != head_hash:
            problems.append(AuditProblem(head_seq, "the chain's head does not match the last event"))
        return problems


def _event(row: AuditRow) -> AuditEvent:
    return AuditEvent(
        seq=row.seq,
        at=row.at,
        actor=row.actor,
        action=row.action,
        target_type=row.target_type,
        target_id=row.target_id,
        project=row.project,
        source=row.source,
        before=row.before,
        after=row.after,
        prev_hash=row.prev_hash,
        hash=row.hash,
    )
