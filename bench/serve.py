"""`gw serve` in its own process, as production runs it, for the submit benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_in_thread(app) -> Iterator[str]:  # noqa: ANN001 - an ASGI app
    """``app`` served by uvicorn in a thread of this process (sharing its GIL) on a free loopback port;
    its URL. Stopped on leaving."""
    import threading

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start within 30 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class GwServe:
    """``gw serve`` (API and refresh scheduler) on a free loopback port, on the given database.

    Its log level is ``warning``, as the in-process server's: no access line per request.
    ``workers``: ``gw serve --workers`` (more than 1 needs PostgreSQL).
    """

    def __init__(self, env: dict[str, str], log_path: Path, *, workers: int = 1) -> None:
        self.workers = workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> GwServe:
        argv = [sys.executable, "-m", "gateway.cli.main", "serve", "--port", str(self.port)]
        if self.workers != 1:
            argv += ["--workers", str(self.workers)]
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(
                [*argv, "--log-level", "warning"], env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"gw serve did not come up: {self.log_path.read_text()[-2000:]}")

    def cpu_s(self) -> tuple[float, float]:
        """CPU seconds (user + system) used so far: (``gw serve`` and its workers, the programs they
        started that still run: the rest backend's slurmrestd daemons). An ``sbatch`` that has ended
        is in neither (its parent's children's time is not read)."""
        assert self.proc is not None
        gateway, others = 0.0, 0.0
        for pid in _tree(self.proc.pid):
            if _comm(pid).startswith("python"):
                gateway += _cpu_s(pid)
            else:
                others += _cpu_s(pid)
        return gateway, others

    def __exit__(self, *_exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc's children lists)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return found


def _comm(pid: int) -> str:
    """A process's command name ('' once it has gone)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _cpu_s(pid: int) -> float:
    """A process's utime + stime in seconds (0 once it has gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
