"""A slurmrestd that is stuck: a real server that takes connections and never answers (or trickles).

It stands in for a daemon that hangs under load (docs/slurm-backends.md, "Time limits"): the kernel
completes each connection, the server reads what is sent and answers nothing, or, with ``trickle_s``,
sends a status line and then one header byte every ``trickle_s`` seconds without end, so that no
single read waits long but the answer never completes. ``requests`` counts the requests it read.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class StuckServer:
    url: str  # as a site file's restd.url gives it: unix:///PATH or http://127.0.0.1:PORT
    address: Path | tuple[str, int]  # as RestConnection takes it
    requests: list[float] = field(default_factory=list)  # when each request arrived (time.monotonic)


@contextmanager
def stuck_server(unix: Path | None = None, *, trickle_s: float | None = None) -> Iterator[StuckServer]:
    """A stuck server on the unix socket ``unix``, else on a free TCP port of 127.0.0.1."""
    if unix is not None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(unix))
        server = StuckServer(f"unix://{unix}", unix)
    else:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        server = StuckServer(f"http://127.0.0.1:{port}", ("127.0.0.1", port))
    listener.listen(64)
    listener.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def hold(conn: socket.socket) -> None:
        conn.settimeout(0.1)
        seen = b""
        while not stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                chunk = None
            except OSError:
                return
            if chunk == b"":
                return  # the client gave up
            if chunk:
                seen += chunk
                if b"\r\n\r\n" in seen:
                    server.requests.append(time.monotonic())
                    seen = b""
                    if trickle_s is not None:
                        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            if trickle_s is not None and server.requests:
                try:
                    conn.sendall(b"a")
                except OSError:
                    return
                stop.wait(trickle_s)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)
            threading.Thread(target=hold, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield server
    finally:
        stop.set()
        acceptor.join(timeout=5)
        listener.close()
        for conn in held:
            conn.close()
