"""HTTP to one slurmrestd over its unix socket: the one module that imports httpx for Slurm.

A ``RestConnection`` keeps its connections alive between requests (no fork,
no new socket per job) and turns every transport failure into a gateway
error: a request that never reached the daemon is ``NotSent`` (safe to
retry, even a submission), one that was sent and got no answer in time is
``SlurmUnavailable`` (its effect is unknown).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from gateway.errors import SlurmUnavailable


class NotSent(SlurmUnavailable):
    """The daemon's socket took no connection: nothing was sent (the daemon is dead or not up yet)."""


class RestConnection:
    """Requests to the slurmrestd listening on ``socket``; answers are its JSON bodies."""

    def __init__(self, socket: Path, *, connect_timeout_s: float = 2.0) -> None:
        self.socket = socket
        self._client = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(socket)),
            base_url="http://slurmrestd",
            timeout=httpx.Timeout(30.0, connect=connect_timeout_s),
        )

    def request(
        self, method: str, path: str, *, timeout_s: float, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, decoded JSON body) of one request; a body that is not JSON reads as
        ``{"errors": [{"error": TEXT}]}``.

        Raises NotSent when the socket takes no connection, SlurmUnavailable when the daemon does not
        answer within ``timeout_s`` or drops the connection after the request was sent.
        """
        what = f"slurmrestd {method} {path}"
        try:
            response = self._client.request(
                method,
                path,
                content=None if body is None else json.dumps(body),
                headers={"Content-Type": "application/json"} if body is not None else None,
                timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 2.0)),
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise NotSent(f"{what}: the daemon's socket takes no connection ({exc})", command=what) from exc
        except httpx.TimeoutException as exc:
            raise SlurmUnavailable(
                f"{what} did not answer within {timeout_s:g} s; job states are unknown until it does",
                command=what,
            ) from exc
        except httpx.TransportError as exc:
            raise SlurmUnavailable(f"{what}: the connection failed ({exc})", command=what) from exc
        try:
            decoded = response.json()
        except ValueError:
            decoded = {"errors": [{"error": response.text.strip() or f"HTTP {response.status_code}"}]}
        if not isinstance(decoded, dict):
            decoded = {"errors": [{"error": f"not a JSON object: {response.text[:200]!r}"}]}
        return response.status_code, decoded

    def close(self) -> None:
        """Close the kept-alive connections (the daemon keeps running)."""
        self._client.close()
