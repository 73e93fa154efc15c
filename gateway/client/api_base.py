"""The HTTP half of ``GatewayClient``: one request, its errors as ``ApiError``, retried submissions.

``ApiBase`` is what the topic parts of the client (``api_runs``, ``api_data``, ``api_evals``) and
``gateway.client.api.GatewayClient`` build on; nothing else talks to the API.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from gateway import __version__
from gateway.client.errors import ApiError
from gateway.client.settings import ClientSettings
from gateway.client.transport import Answer, Transport, TransportError, UnusableUrl

# A submission is retried, with its Idempotency-Key, after a cut connection (status 0) or a gateway
# that is briefly unavailable; pauses between tries, in seconds.
RETRIED_STATUSES = frozenset({0, 502, 503})
RETRY_PAUSES_S = (0.5, 1.0, 2.0)


class ApiBase:
    """The gateway's API over HTTP, as ``settings`` (URL, token, timeout) reach it.

    Each call is one request and returns the answer's JSON body. Every one raises ``ApiError``:
    with the API's status and error kind when it refuses, status 0 when the gateway cannot be reached.
    """

    def __init__(
        self, settings: ClientSettings, *, retry_pauses_s: tuple[float, ...] = RETRY_PAUSES_S
    ) -> None:
        self.settings = settings
        self.retry_pauses_s = retry_pauses_s
        headers = {"User-Agent": f"gw/{__version__}", "Accept": "application/json"}
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        self._http = Transport(settings.url, headers=headers, timeout_s=settings.timeout_s)

    def close(self) -> None:
        """Close the kept-alive connection (a later call opens another)."""
        self._http.close()

    def _answer(self, method: str, path: str, **kwargs: Any) -> Answer:
        """The answer to one request, when it is not an error; ``ApiError`` when it is, or none came."""
        try:
            answer = self._http.request(method, path, **kwargs)
        except UnusableUrl as exc:
            raise ApiError(0, "bad_url", f"{exc}: set GW_URL or url in ~/.config/gw/config.toml") from exc
        except TransportError as exc:
            raise ApiError(
                0,
                "server_unreachable",
                f"cannot reach the gateway at {self.settings.url} ({exc}); "
                "is `gw serve` running? Set GW_URL or url in ~/.config/gw/config.toml",
            ) from exc
        if answer.status >= 400:
            try:
                body = answer.json()
            except ValueError:
                body = None
            if not isinstance(body, dict):
                body = {"error": "http_error", "detail": answer.text[:500] or f"HTTP {answer.status}"}
            raise ApiError(
                answer.status,
                body.get("error", "http_error"),
                body.get("detail"),
                body.get("run_id"),
                body=body,
            )
        return answer

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request; its answer's JSON body."""
        answer = self._answer(method, path, **kwargs)
        if not answer.body:
            return None
        try:
            return answer.json()
        except ValueError as exc:
            raise ApiError(
                answer.status,
                "bad_answer",
                f"the gateway answered {method} {path} with no JSON: {answer.text[:200]!r}",
            ) from exc

    def _bytes(self, path: str, params: dict[str, Any]) -> bytes:
        """GET ``path`` and return the answer's body as bytes (an error still raises ``ApiError``)."""
        return self._answer("GET", path, params=params).body

    def request(self, method: str, path: str, *, body: Any = None, params: dict | None = None) -> Any:
        """Any one API call (``gw poc`` walks routes the other methods do not wrap); its JSON answer.
        None params are not sent."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        return self._call(method, path, json_body=body, params=query or None)

    def _submit(self, path: str, body: dict, idempotency_key: str | None) -> dict:
        """POST a submission with an ``Idempotency-Key``, retried with the same key when the connection
        breaks or the gateway is briefly unavailable (the gateway then returns the first run)."""
        headers = {"Idempotency-Key": idempotency_key or f"gw-{uuid.uuid4()}"}
        for pause_s in (*self.retry_pauses_s, None):
            try:
                return self._call("POST", path, json_body=body, headers=headers)
            except ApiError as exc:
                if exc.status not in RETRIED_STATUSES or exc.kind == "bad_url" or pause_s is None:
                    raise
            time.sleep(pause_s)
        raise AssertionError("unreachable")
