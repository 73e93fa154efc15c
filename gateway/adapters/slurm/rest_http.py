"""HTTP to one slurmrestd over its unix socket: the one module that speaks HTTP to Slurm.

A ``RestConnection`` keeps its connections alive between requests (no fork,
no new socket per job) and turns every transport failure into a gateway
error: a request that never reached the daemon is ``NotSent`` (safe to
retry, even a submission), one that was sent and got no answer in time is
``SlurmUnavailable`` (its effect is unknown).

It is the standard library's ``http.client`` over an ``AF_UNIX`` socket, with a
small pool of kept-alive connections (one per thread that is using one at the
moment). A request here is on the submit path of every job: ``http.client``
costs about a third of the CPU of httpx per request (0.54 against 1.70 ms
measured side by side on the development machine, ``docs/performance.md``),
and the daemon answers plain HTTP/1.1 on one socket, which needs none of
httpx's features. A pooled connection the daemon has closed while idle is
noticed before it is reused (its socket reads as closed) and replaced, so a
request is never sent on a connection that cannot take it.
"""

from __future__ import annotations

import http.client
import json
import socket as sockets
import threading
from pathlib import Path
from typing import Any

from gateway.adapters.kept_alive import closed_by_peer
from gateway.errors import SlurmUnavailable

MAX_IDLE = 16  # kept-alive connections held for reuse at most


class NotSent(SlurmUnavailable):
    """The daemon's socket took no connection: nothing was sent (the daemon is dead or not up yet)."""


class _UnixConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection to a unix socket."""

    def __init__(self, path: Path, connect_timeout_s: float) -> None:
        super().__init__("slurmrestd")
        self.path = path
        self.connect_timeout_s = connect_timeout_s

    def connect(self) -> None:
        sock = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        sock.settimeout(self.connect_timeout_s)
        try:
            sock.connect(str(self.path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


class RestConnection:
    """Requests to the slurmrestd listening on ``socket``; answers are its JSON bodies. Thread-safe."""

    def __init__(self, socket: Path, *, connect_timeout_s: float = 2.0) -> None:
        self.socket = socket
        self.connect_timeout_s = connect_timeout_s
        self._idle: list[_UnixConnection] = []
        self._lock = threading.Lock()

    def request(
        self, method: str, path: str, *, timeout_s: float, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, decoded JSON body) of one request; a body that is not JSON reads as
        ``{"errors": [{"error": TEXT}]}``.

        Raises NotSent when the socket takes no connection, SlurmUnavailable when the daemon does not
        answer within ``timeout_s`` or drops the connection after the request was sent.
        """
        what = f"slurmrestd {method} {path}"
        conn = self._take(min(timeout_s, self.connect_timeout_s))
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        if conn.sock is None:
            try:
                conn.connect()
            except OSError as exc:
                raise NotSent(
                    f"{what}: the daemon's socket takes no connection ({exc})", command=what
                ) from exc
        try:
            conn.sock.settimeout(timeout_s)
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except TimeoutError as exc:
            conn.close()
            raise SlurmUnavailable(
                f"{what} did not answer within {timeout_s:g} s; job states are unknown until it does",
                command=what,
            ) from exc
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise SlurmUnavailable(f"{what}: the connection failed ({exc!r})", command=what) from exc
        if response.will_close:
            conn.close()
        else:
            self._give_back(conn)
        text = raw.decode("utf-8", errors="replace")
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = {"errors": [{"error": text.strip() or f"HTTP {response.status}"}]}
        if not isinstance(decoded, dict):
            decoded = {"errors": [{"error": f"not a JSON object: {text[:200]!r}"}]}
        return response.status, decoded

    def _take(self, connect_timeout_s: float) -> _UnixConnection:
        """An idle kept-alive connection the daemon still holds open, or a new (unconnected) one."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return _UnixConnection(self.socket, connect_timeout_s)
            if not closed_by_peer(conn):
                return conn
            conn.close()

    def _give_back(self, conn: _UnixConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the kept-alive connections (the daemon keeps running)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
