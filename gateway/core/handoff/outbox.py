"""The hand-off outbox's values: a job to mirror a record or deliver an event, and each try at it.

    OutboxItem (kind, subject, target; pending -> done | failed -> dead) --tried as--> HandoffAttempt

Kinds: ``mlflow.release`` (register a release's model version), ``mlflow.alias``
(set the MLflow alias an alias move names), ``mlflow.run`` (log a run to MLflow
tracking), ``webhook`` (deliver one event to one endpoint). One item per
(kind, subject, target): enqueuing it again is a no-op, so a re-sync or a
second scheduler never duplicates work. ``pending`` and ``failed`` items are
due at ``next_at``; ``dead`` ones ran out of tries and wait for an admin's replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

OutboxKind = Literal["mlflow.release", "mlflow.alias", "mlflow.run", "webhook"]
KINDS: tuple[str, ...] = ("mlflow.release", "mlflow.alias", "mlflow.run", "webhook")
OutboxStatus = Literal["pending", "done", "failed", "dead"]
STATUSES: tuple[str, ...] = ("pending", "done", "failed", "dead")


@dataclass(frozen=True)
class NewOutboxItem:
    kind: str
    subject: str  # a release id, an alias move id, a run id
    project: str
    target: str = ""  # the webhook endpoint's name; "" for MLflow
    event_type: str = ""  # webhooks: release.created | alias.moved
    event_id: str = ""  # webhooks: the event's id, the same for every endpoint and try

    def about(self, subject: str) -> NewOutboxItem:
        """This item for ``subject`` (a release or move written in the same transaction); a webhook's
        event id is ``ev-`` + the subject, the same for every endpoint."""
        return replace(self, subject=subject, event_id=f"ev-{subject}" if self.kind == "webhook" else "")


@dataclass(frozen=True)
class OutboxItem:
    id: str
    kind: str
    subject: str
    project: str
    target: str
    event_type: str
    event_id: str
    status: str
    attempts: int
    next_at: datetime | None
    last_error: str
    created_at: datetime
    done_at: datetime | None
    result: dict[str, Any] = field(default_factory=dict)  # MLflow: version, run id, links
    body: str | None = None  # webhooks: the exact body first sent, sent again on every retry


@dataclass(frozen=True)
class HandoffAttempt:
    """One try at an outbox item: when, how it went, the HTTP status (webhooks), the error."""

    id: str
    item_id: str
    number: int
    at: datetime
    ok: bool
    status_code: int | None
    error: str
    duration_ms: int
    delivery_id: str = ""  # webhooks: the X-Gateway-Delivery of this try


def item_dict(item: OutboxItem) -> dict[str, Any]:
    """An outbox item as the API shows it (JSON-ready; the body left out)."""
    return {
        "id": item.id,
        "kind": item.kind,
        "subject": item.subject,
        "project": item.project,
        "target": item.target,
        "event_type": item.event_type,
        "event_id": item.event_id,
        "status": item.status,
        "attempts": item.attempts,
        "next_at": item.next_at.isoformat() if item.next_at else None,
        "last_error": item.last_error,
        "created_at": item.created_at.isoformat(),
        "done_at": item.done_at.isoformat() if item.done_at else None,
        "result": dict(item.result),
    }


def attempt_dict(a: HandoffAttempt) -> dict[str, Any]:
    """A try as the API shows it (JSON-ready)."""
    return {
        "id": a.id,
        "item_id": a.item_id,
        "number": a.number,
        "at": a.at.isoformat(),
        "ok": a.ok,
        "status_code": a.status_code,
        "error": a.error,
        "duration_ms": a.duration_ms,
        "delivery_id": a.delivery_id,
    }
