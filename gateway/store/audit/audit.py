"""The append-only, hash-chained audit log.

Each event's ``hash`` is sha256 over the previous event's hash and this
event's canonical JSON. ``append`` first bumps the single ``audit_head`` row,
which takes the write lock (SQLite) or the row lock (PostgreSQL), so two
appends can never chain onto the same predecessor. ``verify`` recomputes the
chain and names the first event that was edited, and any sequence number
that is missing (a deleted event).

The chain alone cannot show a log cut at its end (delete the last events and
point the head at the one before): ``check`` also returns what checkpoints
kept outside the database are judged against (``gateway/core/audit/anchors.py``),
and ``tip`` what a new checkpoint needs.

An entry and its hash are pure values (``gateway/core/audit/entry.py``); this
module chains them in the database.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.orm import Session

from gateway.core.audit.anchors import ANCHOR_ACTION, AnchorStart
from gateway.core.audit.entry import AuditEntry, event_hash
from gateway.core.audit.event import AuditEvent
from gateway.core.clock import utcnow
from gateway.store.db import Database
from gateway.store.models import AuditHeadRow, AuditRow

AUDIT = AuditRow.__table__
HEAD = AuditHeadRow.__table__
GENESIS = "0" * 64

_BUMP_HEAD = update(HEAD).where(HEAD.c.id == 1).values(seq=HEAD.c.seq + 1).returning(HEAD.c.seq, HEAD.c.hash)
_SET_HEAD_HASH = update(HEAD).where(HEAD.c.id == 1).values(hash=bindparam("new_hash"))
_INSERT = insert(AUDIT)


def append(conn: Session | Connection, entry: AuditEntry) -> int:
    """Chain ``entry`` onto the log inside the caller's transaction; returns its sequence number."""
    return _append(conn, entry)[0]


_BUMP_HEAD_BY = (
    update(HEAD)
    .where(HEAD.c.id == 1)
    .values(seq=HEAD.c.seq + bindparam("count"))
    .returning(HEAD.c.seq, HEAD.c.hash)
)


def append_many(conn: Session | Connection, entries: Sequence[AuditEntry]) -> None:
    """Chain ``entries``, in order, onto the log inside the caller's transaction: the head bumped once
    by their number (taking the same lock ``append`` takes), each hash chained onto the one before,
    every row inserted in one statement, the head's hash set once. The chain is the one ``append``
    called for each would make."""
    if not entries:
        return
    last_seq, prev_hash = conn.execute(_BUMP_HEAD_BY, {"count": len(entries)}).one()
    rows = []
    for seq, entry in enumerate(entries, start=last_seq - len(entries) + 1):
        at = utcnow()
        digest = event_hash(prev_hash, seq, at, entry)
        rows.append(_row(seq, at, entry, prev_hash, digest))
        prev_hash = digest
    conn.execute(_INSERT, rows)
    conn.execute(_SET_HEAD_HASH, {"new_hash": prev_hash})


def _append(conn: Session | Connection, entry: AuditEntry) -> tuple[int, str]:
    seq, prev_hash = conn.execute(_BUMP_HEAD).one()
    # Microseconds survive both databases; the hash must match what verify() reads back.
    at = utcnow()
    digest = event_hash(prev_hash, seq, at, entry)
    conn.execute(_INSERT, _row(seq, at, entry, prev_hash, digest))
    conn.execute(_SET_HEAD_HASH, {"new_hash": digest})
    return seq, digest


def _row(seq: int, at: datetime, entry: AuditEntry, prev_hash: str, digest: str) -> dict[str, Any]:
    """The audit_log row of ``entry`` at ``seq``, chained onto ``prev_hash`` with its own ``digest``."""
    return {
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
    }


@dataclass(frozen=True)
class AuditProblem:
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"event {self.seq}: {self.problem}"


@dataclass(frozen=True)
class ChainCheck:
    """The chain recomputed: its problems, where it ends, and what checkpoints are judged against."""

    problems: list[AuditProblem]
    head_seq: int
    head_hash: str
    recorded: dict[int, str] = field(default_factory=dict)  # hash of each asked-for event still there
    anchor_start: AnchorStart | None = None  # the newest audit.anchor event


@dataclass(frozen=True)
class Tip:
    """The chain's head, the hash the log holds for one asked-for event (None: not there), the newest
    audit.anchor event."""

    seq: int
    hash: str
    hash_at: str | None
    anchor_start: AnchorStart | None


class AuditStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, entry: AuditEntry) -> int:
        """Chain ``entry`` onto the log in a transaction of its own; its sequence number."""
        with self.db.transaction() as conn:
            return append(conn, entry)

    def record_hashed(self, entry: AuditEntry) -> tuple[int, str]:
        """Like ``record``; returns the event's sequence number and hash."""
        with self.db.transaction() as conn:
            return _append(conn, entry)

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

    def events_for(
        self, target_ids: Collection[str], *, projects: Sequence[str] | None = None, limit: int = 5000
    ) -> list[AuditEvent]:
        """Events about any of ``target_ids`` (in ``projects``; None: all), in order, at most ``limit``."""
        if not target_ids:
            return []
        query = select(AuditRow).where(AuditRow.target_id.in_(sorted(target_ids))).order_by(AuditRow.seq)
        if projects is not None:
            query = query.where(AuditRow.project.in_(list(projects)))
        with self.db.session() as session:
            return [_event(r) for r in session.scalars(query.limit(limit))]

    def verify(self) -> list[AuditProblem]:
        """Recompute the chain; report edited events and missing sequence numbers."""
        return self.check().problems

    def check(self, anchored: Collection[int] = ()) -> ChainCheck:
        """Recompute the chain (as ``verify``), and collect the hash of each event in ``anchored``."""
        problems: list[AuditProblem] = []
        recorded: dict[int, str] = {}
        wanted = set(anchored)
        start: AnchorStart | None = None
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
                if event.seq in wanted:
                    recorded[event.seq] = event.hash
                if event.action == ANCHOR_ACTION and event.seq <= head_seq:
                    start = _anchor_start(event.seq, event.at, event.after)
                prev_hash, expected = event.hash, event.seq + 1
        while expected <= head_seq:
            problems.append(AuditProblem(expected, "missing (deleted?)"))
            expected += 1
        if not problems and prev_hash != head_hash:
            problems.append(AuditProblem(head_seq, "the chain's head does not match the last event"))
        return ChainCheck(problems, head_seq, head_hash, recorded, start)

    def tip(self, seq: int | None = None) -> Tip:
        """The head, the log's hash of event ``seq`` (when given), and the newest audit.anchor event:
        three indexed look-ups, cheap enough for every scheduler cycle."""
        with self.db.session() as session:
            head_seq, head_hash = session.execute(select(HEAD.c.seq, HEAD.c.hash).where(HEAD.c.id == 1)).one()
            hash_at = None
            if seq is not None:
                hash_at = session.scalar(select(AuditRow.hash).where(AuditRow.seq == seq))
            newest = session.execute(
                select(AuditRow.seq, AuditRow.at, AuditRow.after)
                .where(AuditRow.action == ANCHOR_ACTION, AuditRow.seq <= head_seq)
                .order_by(AuditRow.seq.desc())
                .limit(1)
            ).first()
        start = _anchor_start(*newest) if newest is not None else None
        return Tip(head_seq, head_hash, hash_at, start)


def _anchor_start(seq: int, at: datetime, after: dict[str, Any] | None) -> AnchorStart:
    path = after.get("path") if isinstance(after, dict) else None
    return AnchorStart(seq=seq, at=at, path=str(path) if path is not None else "(no path recorded)")


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
