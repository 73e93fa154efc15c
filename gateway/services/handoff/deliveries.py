"""Webhook events: their bodies, built from the gateway's records, and one signed try at a delivery.

An event's body is built once, at its first try, from immutable records (the
release, the alias move) and kept with the item: every retry and replay
sends the same bytes with the same ``X-Gateway-Event-Id``, re-signed with a
fresh timestamp and a new ``X-Gateway-Delivery``. A 2xx answer is a
delivery; anything else, or no answer, is a failed try (at least once: a
receiver de-duplicates on the event id).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from gateway.adapters.handoff import WebhookPoster
from gateway.core.handoff.outbox import OutboxItem
from gateway.core.handoff.webhooks import event_body, headers_for
from gateway.core.releases.views import release_dict
from gateway.errors import HandoffError
from gateway.services.handoff.config import HandoffConfig
from gateway.services.handoff.mlflow_jobs import links_of
from gateway.store.releases.promotions import PromotionStore
from gateway.store.releases.releases import ReleaseStore


@dataclass(frozen=True)
class Tried:
    ok: bool
    status_code: int | None
    error: str
    duration_ms: int
    delivery_id: str
    body: str


class WebhookDeliveries:
    def __init__(
        self, poster: WebhookPoster, config: HandoffConfig, releases: ReleaseStore, promotions: PromotionStore
    ) -> None:
        self.poster = poster
        self.config = config
        self.releases = releases
        self.promotions = promotions

    def body(self, item: OutboxItem) -> str:
        """The event's body: kept from its first try, else built from the records now."""
        if item.body is not None:
            return item.body
        if item.event_type == "release.created":
            release = self.releases.release_by_id(item.subject)
            data: dict[str, Any] = {
                "at": release.created_at.isoformat(),
                "project": release.project,
                "model": f"{release.project}/{release.model}",
                "actor": release.created_by,
                "release": _release(release),
                "links": _links(self.config, release),
            }
        else:
            move = self.promotions.alias_event(item.subject)
            to = self.releases.release_by_id(move.to_release) if move.to_release else None
            before = self.releases.release_by_id(move.from_release) if move.from_release else None
            model = self.releases.model_by_id(move.model_id)
            data = {
                "at": move.at.isoformat(),
                "project": model.project,
                "model": model.ref,
                "alias": move.alias,
                "move_id": move.id,
                "seq": move.seq,
                "actor": move.actor,
                "reason": move.reason,
                "from": _release(before) if before else None,
                "to": _release(to) if to else None,
                "approvals": list(move.approvals),
                "request_id": move.request_id,
                "gate_id": move.gate_id,
                "override": move.override,
                "policy": move.policy,
                "links": _links(self.config, to) if to else {},
            }
        return event_body(item.event_type, item.event_id, data).decode()

    def deliver(self, item: OutboxItem) -> Tried:
        """One signed POST of the item's event to its endpoint."""
        body = self.body(item)
        delivery = f"dl-{uuid.uuid4().hex[:16]}"
        endpoint = self.config.endpoint(item.target)
        if endpoint is None:
            raise HandoffError(f"webhook endpoint {item.target!r} is no longer configured (GATEWAY_WEBHOOKS)")
        headers = headers_for(
            endpoint.secret, item.event_type, item.event_id, delivery, int(time.time()), body.encode()
        )
        started = time.monotonic()
        try:
            status, answer = self.poster.post(
                endpoint.url, body.encode(), headers, timeout_s=self.config.webhook_timeout_s
            )
        except HandoffError as exc:
            return Tried(False, None, str(exc), _ms(started), delivery, body)
        ok = 200 <= status < 300
        error = "" if ok else f"HTTP {status} from {endpoint.name}: {answer[:500]}"
        return Tried(ok, status, error, _ms(started), delivery, body)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _release(release: Any) -> dict[str, Any]:
    fields = release_dict(release)
    keep = ("id", "ref", "version", "artifact_sha256", "artifact_path", "run_id", "created_by", "status")
    return {k: fields[k] for k in keep if k in fields}


def _links(config: HandoffConfig, release: Any) -> dict[str, str]:
    links = links_of(config, release)
    return {k: v for k, v in vars(links).items() if v}
