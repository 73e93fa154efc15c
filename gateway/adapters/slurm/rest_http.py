"""HTTP to one slurmrestd over a unix socket or TCP: the one module that speaks HTTP to Slurm.

A ``RestConnection`` keeps its connections alive between requests (no fork,
no new socket per job) and turns every transport failure into a gateway
error: a request that never reached the daemon is ``NotSent`` (safe to
retry, even a submission), one that was sent and got no answer in time is
``SlurmUnavailable`` (its effect is unknown).

Every request has two limits: ``connect_timeout_s`` for the connection (the
``slurmrestd_connect_timeout_s`` setting), and ``timeout_s`` for the whole
request, from its first byte sent to the last byte of the answer read (the
``slurm_query_timeout_s`` or ``slurm_submit_timeout_s`` setting). The second is
a deadline, not a limit per socket read: a daemon that trickles its answer a
byte at a time cannot hold a request longer than ``timeout_s`` either
(``_DeadlineSocket``).

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
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gateway.adapters.kept_alive import closed_by_peer
from gateway.errors import SlurmUnavailable

MAX_IDLE = 16  # kept-alive connections held for reuse at most


class NotSent(SlurmUnavailable):
    """The daemon's socket took no connection: nothing was sent (the daemon is dead or not up yet)."""


class _DeadlineSocket(sockets.socket):
    """A socket whose sends and reads all end by ``deadline`` (``time.monotonic()``): each one waits
    at most the time left, and one begun past it raises TimeoutError at once.

    ``http.client`` reads an answer through ``makefile``, whose reads call ``recv_into`` here, and
    sends with ``sendall``: a socket timeout alone would bound each read, not the request.
    """

    deadline = float("inf")

    def _time_left(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.settimeout(left)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:  # noqa: ANN401 - a buffer
        self._time_left()
        return super().recv_into(buffer, nbytes, flags)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        self._time_left()
        return super().recv(bufsize, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:  # noqa: ANN401 - bytes-like
        self._time_left()
        super().sendall(data, flags)


class _UnixConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection to a unix socket, its connect bounded by ``connect_timeout_s``."""

    def __init__(self, path: Path, connect_timeout_s: float) -> None:
        super().__init__("slurmrestd")
        self.path = path
        self.connect_timeout_s = connect_timeout_s

    def connect(self) -> None:
        sock = _DeadlineSocket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        sock.settimeout(self.connect_timeout_s)
        try:
            sock.connect(str(self.path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


class _TcpConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection to host:port, its connect bounded by ``connect_timeout_s``."""

    def __init__(self, address: tuple[str, int], connect_timeout_s: float) -> None:
        super().__init__(address[0], address[1], timeout=connect_timeout_s)

    def connect(self) -> None:
        plain = sockets.create_connection((self.host, self.port), self.timeout)
        sock = _DeadlineSocket(plain.family, plain.type, plain.proto, fileno=plain.detach())
        sock.setsockopt(sockets.IPPROTO_TCP, sockets.TCP_NODELAY, 1)  # as http.client's own connect
        self.sock = sock


class RestConnection:
    """Requests to the slurmrestd listening on ``socket`` (a unix socket) or at ``tcp`` (host, port);
    answers are its JSON bodies. Thread-safe."""

    def __init__(
        self,
        socket: Path | None = None,
        *,
        tcp: tuple[str, int] | None = None,
        connect_timeout_s: float = 2.0,
    ) -> None:
        if (socket is None) == (tcp is None):
            raise ValueError("a RestConnection needs a unix socket or a TCP address, one of them")
        self.socket = socket
        self.tcp = tcp
        self.connect_timeout_s = connect_timeout_s
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        *,
        timeout_s: float,
        body: dict[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, decoded JSON body) of one request with ``headers`` added; a body that is not
        JSON reads as ``{"errors": [{"error": TEXT}]}``. Headers never appear in an error.

        Raises NotSent when the socket takes no connection within ``connect_timeout_s``,
        SlurmUnavailable when the whole answer has not come within ``timeout_s`` of the request
        (a deadline: connecting counts, and so does every read) or the daemon drops the connection
        after the request was sent. Either message names the daemon and the limit.
        """
        what = f"slurmrestd {method} {path}"
        deadline = time.monotonic() + timeout_s
        connect_s = min(timeout_s, self.connect_timeout_s)
        conn = self._take(connect_s)
        payload = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if payload is not None else {}
        sent.update(headers or {})
        if conn.sock is None:
            try:
                conn.connect()
            except TimeoutError as exc:
                message = f"{what}: {self.where()} took no connection within {connect_s:g} s"
                raise NotSent(message, command=what) from exc
            except OSError as exc:
                raise NotSent(f"{what}: {self.where()} takes no connection ({exc})", command=what) from exc
        sock = conn.sock
        assert isinstance(sock, _DeadlineSocket)  # every connection here makes one (connect above)
        sock.deadline = deadline
        try:
            conn.request(method, path, body=payload, headers=sent)
            response = conn.getresponse()
            raw = response.read()
        except TimeoutError as exc:
            conn.close()
            raise SlurmUnavailable(
                f"{what}: {self.where()} did not answer within {timeout_s:g} s; the cluster's job states "
                "are unknown until it does",
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

    def where(self) -> str:
        """Where the daemon listens, for messages: its socket's path or http://host:port."""
        return f"http://{self.tcp[0]}:{self.tcp[1]}" if self.tcp else f"the daemon's socket {self.socket}"

    def _take(self, connect_timeout_s: float) -> http.client.HTTPConnection:
        """An idle kept-alive connection the daemon still holds open, or a new (unconnected) one."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                if self.tcp is not None:
                    return _TcpConnection(self.tcp, connect_timeout_s)
                assert self.socket is not None  # one of the two, checked at construction
                return _UnixConnection(self.socket, connect_timeout_s)
            if not closed_by_peer(conn):
                return conn
            conn.close()

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
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
