"""Signed web session values and CSRF tokens: pure functions of a key, a value and the time.

A session cookie is ``<base64url JSON>.<base64url HMAC-SHA256>``; its JSON
holds the API token id it was made from (so revoking the token ends the
session: the web layer checks the token on every page), the user name and
the expiry in Unix seconds. A CSRF token is the HMAC of a random nonce that
lives in a cookie of its own (double submit with a signed value): a form
must carry the token that matches the browser's nonce.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

MAX_COOKIE_CHARS = 1024  # a longer session value is not one of ours


@dataclass(frozen=True)
class SessionValue:
    token_id: int
    user: str
    expires_at_s: float  # Unix seconds


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, purpose: str, body: str) -> str:
    return _b64(hmac.new(key, f"{purpose}\n{body}".encode(), hashlib.sha256).digest())


def sign_session(key: bytes, value: SessionValue) -> str:
    """The cookie text for ``value``, signed with ``key``."""
    body = _b64(json.dumps({"t": value.token_id, "u": value.user, "e": value.expires_at_s}).encode())
    return f"{body}.{_mac(key, 'session', body)}"


def read_session(key: bytes, text: str | None, *, now_s: float) -> SessionValue | None:
    """The session ``text`` holds, or None when it is absent, malformed, not signed by ``key`` or
    expired at ``now_s`` (Unix seconds)."""
    if not text or len(text) > MAX_COOKIE_CHARS or text.count(".") != 1:
        return None
    body, mac = text.split(".")
    if not hmac.compare_digest(mac, _mac(key, "session", body)):
        return None
    try:
        data = json.loads(_unb64(body))
        value = SessionValue(int(data["t"]), str(data["u"]), float(data["e"]))
    except (ValueError, KeyError, TypeError):
        return None
    return value if value.expires_at_s > now_s else None


def new_nonce() -> str:
    """A fresh random CSRF nonce (for the browser's CSRF cookie)."""
    return secrets.token_urlsafe(24)


def csrf_token(key: bytes, nonce: str) -> str:
    """The token forms carry for the browser whose CSRF cookie holds ``nonce``."""
    return _mac(key, "csrf", nonce)


def csrf_ok(key: bytes, nonce: str | None, token: str | None) -> bool:
    """Whether a form's ``token`` matches the browser's ``nonce`` (both must be present)."""
    if not nonce or not token or len(nonce) > 128 or len(token) > 128:
        return False
    return hmac.compare_digest(token, csrf_token(key, nonce))
