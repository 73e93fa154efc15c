"""Signed webhook events: the headers, the signature, its check, and the retry delays.

A delivery is one HTTP POST of a JSON event to a site-configured endpoint.
The receiver checks it like a GitHub or MLflow webhook:

    X-Gateway-Event          the event type (``release.created``, ``alias.moved``)
    X-Gateway-Event-Id       the event's id: the same on every retry and replay (de-duplicate on it)
    X-Gateway-Delivery       this attempt's own id (a new one per try)
    X-Gateway-Timestamp      when this attempt was signed, Unix seconds
    X-Gateway-Signature-256  ``sha256=`` + hex HMAC-SHA256(secret, TIMESTAMP + "." + BODY)

The timestamp is inside the signed text, so a captured delivery cannot be
replayed later with a fresh timestamp; a receiver refuses a timestamp older
than its tolerance (``verify``'s ``tolerance_s``, 300 s like Stripe's). The
body is the exact bytes sent: verify them before parsing the JSON.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

EVENT_HEADER = "X-Gateway-Event"
EVENT_ID_HEADER = "X-Gateway-Event-Id"
DELIVERY_HEADER = "X-Gateway-Delivery"
TIMESTAMP_HEADER = "X-Gateway-Timestamp"
SIGNATURE_HEADER = "X-Gateway-Signature-256"
SIGNATURE_PREFIX = "sha256="
EVENT_TYPES: tuple[str, ...] = ("release.created", "alias.moved")
DEFAULT_TOLERANCE_S = 300


def signed_text(timestamp: int, body: bytes) -> bytes:
    """What the signature covers: the timestamp, a dot, the body's exact bytes."""
    return str(int(timestamp)).encode() + b"." + body


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Gateway-Signature-256`` value of ``body`` sent at ``timestamp`` (Unix seconds)."""
    digest = hmac.new(secret.encode(), signed_text(timestamp, body), hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
) -> str | None:
    """Why a delivery is not authentic (None when it is): a missing or stale timestamp, a missing
    signature, or one that does not match (compared in constant time). ``headers``: case-insensitive
    lookups are the caller's (pass a mapping whose keys are the header names above)."""
    stamp = headers.get(TIMESTAMP_HEADER)
    given = headers.get(SIGNATURE_HEADER)
    if not stamp or not stamp.isdigit():
        return f"no {TIMESTAMP_HEADER} (Unix seconds)"
    if abs(now - int(stamp)) > tolerance_s:
        return f"{TIMESTAMP_HEADER} {stamp} is more than {tolerance_s:g} s from now"
    if not given or not given.startswith(SIGNATURE_PREFIX):
        return f"no {SIGNATURE_HEADER} (sha256=...)"
    if not hmac.compare_digest(given, sign(secret, int(stamp), body)):
        return "the signature does not match the body and timestamp"
    return None


def headers_for(
    secret: str, event_type: str, event_id: str, delivery_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """Every header of one delivery attempt (the content type included)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "gateway-webhooks/1",
        EVENT_HEADER: event_type,
        EVENT_ID_HEADER: event_id,
        DELIVERY_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(int(timestamp)),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }


def event_body(event_type: str, event_id: str, data: Mapping[str, Any]) -> bytes:
    """An event's JSON body, canonical (sorted keys, no spaces): the same record gives the same bytes."""
    document = {"type": event_type, "id": event_id, **dict(data)}
    return json.dumps(document, sort_keys=True, separators=(",", ":"), default=str).encode()


def backoff_s(attempts: int, *, base_s: float, cap_s: float) -> float:
    """The wait before try ``attempts + 1`` after ``attempts`` failed ones: base, 2x, 4x ... up to cap."""
    return float(min(cap_s, base_s * (2 ** max(0, attempts - 1))))
