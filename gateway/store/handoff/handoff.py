"""The hand-off outbox: MLflow mirror jobs and webhook deliveries, due times, and every try at them.

``enqueue`` adds items (one per kind, subject and target: a second enqueue
of the same is a no-op); ``due`` lists the pending and failed ones whose time
has come; ``record`` writes one try and moves the item on (done, failed with
the next due time, or dead); ``replay`` makes an item due again now.
``runs_to_track`` finds ended, harvested runs with no MLflow tracking item
yet: one indexed anti-join, so the sweep costs the same however many runs
are already mirrored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.core.handoff.outbox import HandoffAttempt, NewOutboxItem, OutboxItem
from gateway.errors import NotFound, StoreError
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.handoff.models import HandoffAttemptRow, OutboxRow
from gateway.store.lineage.lineage import TERMINAL_STATES
from gateway.store.models import AttemptRow, RunRow, utcnow
from gateway.store.versioned import new_id


def add_items(session: Session, items: Sequence[NewOutboxItem], now: datetime) -> list[OutboxRow]:
    """Insert new outbox items in the caller's transaction (a release or alias move and its hand-off
    commit together, or neither does: the outbox pattern)."""
    rows = [HandoffStore._new(session, item, now) for item in items]
    session.flush()
    return rows


class HandoffStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def enqueue(self, items: Sequence[NewOutboxItem], *, now: datetime | None = None) -> list[OutboxItem]:
        """Add each item unless one of its kind, subject and target exists; returns every item, new or not.

        One transaction inserting all of them (a new release's or move's items cannot exist yet); when
        one does exist (a re-sync, a sweep, another process at the same moment), the unique key refuses
        the batch and each is looked up, or added, on its own."""
        now = now or utcnow()
        if not items:
            return []
        try:
            with self.db.session() as session:
                return [_item(r) for r in add_items(session, items, now)]
        except StoreError as exc:
            if not isinstance(exc.__cause__, IntegrityError):
                raise
        out = []
        for item in items:
            try:
                with self.db.session() as session:
                    row = self._find(session, item) or self._new(session, item, now)
                    session.flush()
                    out.append(_item(row))
            except StoreError as exc:  # another process enqueued the same item at the same moment
                if not isinstance(exc.__cause__, IntegrityError):
                    raise
                with self.db.session() as session:
                    found = self._find(session, item)
                    if found is None:
                        raise
                    out.append(_item(found))
        return out

    @staticmethod
    def _new(session: Any, item: NewOutboxItem, now: datetime) -> OutboxRow:
        row = OutboxRow(
            id=new_id("hx"),
            kind=item.kind,
            subject=item.subject,
            project=item.project,
            target=item.target,
            event_type=item.event_type,
            event_id=item.event_id,
            status="pending",
            attempts=0,
            next_at=now,
            last_error="",
            created_at=now,
        )
        session.add(row)
        return row

    @staticmethod
    def _find(session: Any, item: NewOutboxItem) -> OutboxRow | None:
        return session.scalar(
            select(OutboxRow).where(
                OutboxRow.kind == item.kind,
                OutboxRow.subject == item.subject,
                OutboxRow.target == item.target,
            )
        )

    def due(self, *, kinds: Sequence[str], now: datetime | None = None, limit: int = 50) -> list[OutboxItem]:
        """Pending and failed items of these kinds due at ``now``, oldest first, at most ``limit``."""
        now = now or utcnow()
        query = (
            select(OutboxRow)
            .where(
                OutboxRow.status.in_(("pending", "failed")),
                OutboxRow.next_at <= now,
                OutboxRow.kind.in_(list(kinds)),
            )
            .order_by(OutboxRow.created_at, OutboxRow.id)
            .limit(limit)
        )
        with self.db.session() as session:
            return [_item(r) for r in session.scalars(query)]

    def record(
        self,
        item_id: str,
        *,
        ok: bool,
        error: str = "",
        status_code: int | None = None,
        duration_ms: int = 0,
        delivery_id: str = "",
        result: dict[str, Any] | None = None,
        body: str | None = None,
        next_at: datetime | None = None,
        dead: bool = False,
        now: datetime | None = None,
    ) -> OutboxItem:
        """Write one try of an item and move it on: done when ``ok``; else failed, due again at
        ``next_at``, or dead. ``result`` is merged into the item's; ``body`` is kept once set."""
        now = now or utcnow()
        with self.db.session() as session:
            row = session.get(OutboxRow, item_id)
            if row is None:
                raise NotFound(f"no hand-off item {item_id!r}")
            row.attempts += 1
            session.add(
                HandoffAttemptRow(
                    id=new_id("ht"),
                    item_id=item_id,
                    number=row.attempts,
                    at=now,
                    ok=ok,
                    status_code=status_code,
                    error=error[:4096],
                    duration_ms=duration_ms,
                    delivery_id=delivery_id,
                )
            )
            if result:
                row.result = dict(row.result or {}) | result
            if body is not None and row.body is None:
                row.body = body
            if ok:
                row.status, row.done_at, row.next_at, row.last_error = "done", now, None, ""
            else:
                row.status = "dead" if dead else "failed"
                row.next_at = None if dead else next_at
                row.last_error = error[:4096]
            session.flush()
            return _item(row)

    def replay(self, item_id: str, *, audit: AuditEntry, now: datetime | None = None) -> OutboxItem:
        """Make an item due again now (a dead one, or a done delivery sent once more), audited."""
        with self.db.session() as session:
            row = session.get(OutboxRow, item_id)
            if row is None:
                raise NotFound(f"no hand-off item {item_id!r}")
            row.status, row.next_at = "pending", now or utcnow()
            session.flush()
            append(session, audit)
            return _item(row)

    def item(self, item_id: str) -> OutboxItem:
        """One item, or NotFound."""
        with self.db.session() as session:
            row = session.get(OutboxRow, item_id)
            if row is None:
                raise NotFound(f"no hand-off item {item_id!r}")
            return _item(row)

    def items(
        self,
        *,
        subjects: Sequence[str] | None = None,
        projects: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        limit: int = 500,
    ) -> list[OutboxItem]:
        """Items matching every filter given, oldest first, at most ``limit``."""
        query = select(OutboxRow)
        if subjects is not None:
            query = query.where(OutboxRow.subject.in_(list(subjects)))
        if projects is not None:
            query = query.where(OutboxRow.project.in_(list(projects)))
        if kinds is not None:
            query = query.where(OutboxRow.kind.in_(list(kinds)))
        if statuses is not None:
            query = query.where(OutboxRow.status.in_(list(statuses)))
        query = query.order_by(OutboxRow.created_at, OutboxRow.id).limit(limit)
        with self.db.session() as session:
            return [_item(r) for r in session.scalars(query)]

    def attempts(self, item_ids: Sequence[str]) -> list[HandoffAttempt]:
        """Every try of these items, in order."""
        if not item_ids:
            return []
        query = (
            select(HandoffAttemptRow)
            .where(HandoffAttemptRow.item_id.in_(list(item_ids)))
            .order_by(HandoffAttemptRow.at, HandoffAttemptRow.number)
        )
        with self.db.session() as session:
            return [
                HandoffAttempt(
                    id=r.id,
                    item_id=r.item_id,
                    number=r.number,
                    at=r.at,
                    ok=bool(r.ok),
                    status_code=r.status_code,
                    error=r.error,
                    duration_ms=r.duration_ms,
                    delivery_id=r.delivery_id,
                )
                for r in session.scalars(query)
            ]

    def runs_to_track(self, *, since: datetime | None = None, limit: int = 50) -> list[tuple[str, str]]:
        """(run id, project) of runs that ended (every attempt ended and harvested) with no MLflow
        tracking item yet, oldest first; ``since``: only runs created then or later."""
        tracked = exists().where(and_(OutboxRow.kind == "mlflow.run", OutboxRow.subject == RunRow.id))
        unharvested = exists().where(and_(AttemptRow.run_id == RunRow.id, AttemptRow.outputs_at.is_(None)))
        query = select(RunRow.id, RunRow.project).where(
            RunRow.state.in_(TERMINAL_STATES), ~tracked, ~unharvested
        )
        if since is not None:
            query = query.where(RunRow.created_at >= since)
        query = query.order_by(RunRow.created_at, RunRow.id).limit(limit)
        with self.db.session() as session:
            return [(rid, project) for rid, project in session.execute(query)]

    def counts(self) -> dict[str, int]:
        """How many items there are of each status (health and metrics)."""
        with self.db.session() as session:
            rows = session.execute(select(OutboxRow.status, func.count()).group_by(OutboxRow.status))
            return {status: n for status, n in rows}


def _item(row: OutboxRow) -> OutboxItem:
    return OutboxItem(
        id=row.id,
        kind=row.kind,
        subject=row.subject,
        project=row.project,
        target=row.target,
        event_type=row.event_type,
        event_id=row.event_id,
        status=row.status,
        attempts=row.attempts,
        next_at=row.next_at,
        last_error=row.last_error,
        created_at=row.created_at,
        done_at=row.done_at,
        result=dict(row.result or {}),
        body=row.body,
    )
