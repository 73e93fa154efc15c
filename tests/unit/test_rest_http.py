"""The slurmrestd connection pool against a real unix-socket HTTP server of its own.

The server here closes every connection after one answer while announcing keep-alive (as
a daemon that drops idle connections does): each next request must notice that before it
sends, and go out on a new connection, never fail. Connections the server keeps are reused.
A socket nobody listens on is NotSent; an answer that is not JSON reads as an error.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gateway.adapters.slurm.rest_http import NotSent, RestConnection
from gateway.errors import SlurmUnavailable


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


@contextmanager
def server(path: Path, *, close_after_answer: bool, body: bytes = b'{"ok": 1}') -> Iterator[list[int]]:
    """A unix-socket HTTP/1.1 server at ``path``; yields the list of requests per connection."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    listener.settimeout(0.2)
    per_connection: list[int] = []
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        index = len(per_connection)
        per_connection.append(0)
        with conn:
            conn.settimeout(5)
            buffer = b""
            while not stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                length = _content_length(head)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                per_connection[index] += 1
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                if close_after_answer:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield per_connection
    finally:
        stop.set()
        acceptor.join(timeout=5)
        listener.close()


def test_connections_are_kept_alive_and_reused(tmp_path):
    sock = tmp_path / "s.sock"
    with server(sock, close_after_answer=False) as per_connection:
        rest = RestConnection(sock)
        answers = [rest.request("GET", "/ping", timeout_s=5) for _ in range(20)]
        rest.close()
    assert answers == [(200, {"ok": 1})] * 20
    assert per_connection == [20]  # one connection for all of them


def test_a_connection_the_daemon_closed_is_replaced_before_sending(tmp_path):
    sock = tmp_path / "s.sock"
    with server(sock, close_after_answer=True) as per_connection:
        rest = RestConnection(sock)
        answers = []
        for _ in range(10):
            answers.append(rest.request("POST", "/job/submit", timeout_s=5, body={"script": "x"}))
            time.sleep(0.02)  # the server's close arrives while the connection sits idle in the pool
        rest.close()
    assert answers == [(200, {"ok": 1})] * 10  # none failed, none was sent on a closed connection
    assert per_connection == [1] * 10


def test_many_threads_share_the_pool(tmp_path):
    sock = tmp_path / "s.sock"
    with server(sock, close_after_answer=False) as per_connection:
        rest = RestConnection(sock)
        results: list[tuple[int, dict]] = []

        def work() -> None:
            for _ in range(25):
                results.append(rest.request("GET", "/diag", timeout_s=5))

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        rest.close()
    assert len(results) == 200 and all(r == (200, {"ok": 1}) for r in results)
    assert sum(per_connection) == 200 and len(per_connection) <= 8  # at most one connection per thread


def test_no_listener_is_not_sent(tmp_path):
    with pytest.raises(NotSent, match="takes no connection"):
        RestConnection(tmp_path / "nobody.sock").request("POST", "/job/submit", timeout_s=1, body={})


def test_a_body_that_is_not_json_reads_as_an_error(tmp_path):
    sock = tmp_path / "s.sock"
    with server(sock, close_after_answer=False, body=b"Authentication failure"):
        status, answer = RestConnection(sock).request("GET", "/diag", timeout_s=5)
    assert status == 200 and answer == {"errors": [{"error": "Authentication failure"}]}


def test_a_daemon_that_hangs_up_mid_answer_is_unavailable(tmp_path):
    sock = tmp_path / "s.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.listen(1)

    def half_answer() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
        conn.close()

    thread = threading.Thread(target=half_answer, daemon=True)
    thread.start()
    with pytest.raises(SlurmUnavailable, match="connection failed") as raised:
        RestConnection(sock).request("POST", "/job/submit", timeout_s=5, body={})
    assert not isinstance(raised.value, NotSent)  # it was sent: its effect is unknown
    thread.join(timeout=5)
    listener.close()
