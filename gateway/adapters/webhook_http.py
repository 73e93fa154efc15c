"""Webhook deliveries over HTTP(S) with the standard library's ``http.client`` (no redirects followed:
a receiver that moved must be configured anew, so a signed body never lands somewhere unexpected)."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit

from gateway.errors import HandoffError

ANSWER_MAX = 2048  # how much of a receiver's answer is kept in the delivery record


class HttpWebhookPoster:
    def post(self, url: str, body: bytes, headers: Mapping[str, str], *, timeout_s: float) -> tuple[int, str]:
        """POST ``body``; the status and the start of the answer, or HandoffError without an answer."""
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=timeout_s, context=ssl.create_default_context()
            )
        else:
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout_s)
        try:
            connection.request("POST", path, body=body, headers=dict(headers))
            response = connection.getresponse()
            answer = response.read(ANSWER_MAX).decode("utf-8", "replace")
            return response.status, answer
        except (OSError, http.client.HTTPException) as exc:
            raise HandoffError(f"no answer from the webhook endpoint {parts.netloc}: {exc}") from exc
        finally:
            connection.close()
