"""A real `gw serve` for CLI tests: its own port, database, runs directory and Slurm accounts.

Bootstrapped as an operator would: `gw admin apply` of the test site, `gw
admin token` for each user, then `gw serve`; torn down by stopping it,
draining its accounts' jobs and applying an empty site.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import JOB_ROOT
from tests.service.conftest import SITE, TEARDOWN_SITE, drain_accounts, ensure_os_users

GW = [sys.executable, "-m", "gateway.cli.main"]


class Process:
    """The `gw serve` process of a Serve: a test may kill it (-9) and start it again on the same port."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, url: str) -> None:
        self.argv, self.env, self.log_path, self.url = argv, env, log_path, url
        self.log = open(log_path, "a")  # noqa: SIM115 - closed in stop()
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 60) -> None:
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.proc.kill()
        pytest.fail(f"gw serve did not come up: {self.log_path.read_text()}")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()


@dataclass(frozen=True)
class Serve:
    url: str
    config: str  # a GW_CONFIG path that does not exist: only GW_URL and GW_TOKEN count
    log: Path
    account: str  # project test's Slurm account (others add a suffix: o for other ...)
    tokens: dict[str, str]  # by gateway user
    applied: str  # what `gw admin apply` printed
    env: dict[str, str]  # the environment `gw admin ...` needs to act on this gateway
    process: Process | None = None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_in_thread(app) -> Iterator[str]:  # noqa: ANN001 - an ASGI app
    """``app`` served by uvicorn in a thread of this process on a free loopback port; its URL."""
    import threading

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def gw_serve(
    state: Path,
    *,
    prefix: str,
    users: Sequence[str] = ("tester",),
    database_url: str | None = None,
    settings: dict[str, str] | None = None,
    sync_slurm: bool = True,
    serve_args: Sequence[str] = (),
) -> Iterator[Serve]:
    """``settings``: more GATEWAY_* variables; ``database_url``: default a SQLite file in ``state``;
    ``sync_slurm`` False: the site's Slurm accounts are not made (for tests that run no jobs);
    ``serve_args``: more ``gw serve`` options (``--workers 2``)."""
    port = free_port()
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": database_url or f"sqlite:///{state}/gateway.db",
        "GATEWAY_RUNS_DIR": str(JOB_ROOT / f"{prefix}-runs-{port}"),
        "GATEWAY_REFRESH_INTERVAL_S": "1",
        **(settings or {}),
    }
    ensure_os_users()
    account = f"gwt{prefix}{port}"
    site = state / "site.yaml"
    site.write_text(SITE.format(account=account))
    no_slurm = [] if sync_slurm else ["--no-slurm"]
    made = subprocess.run([*GW, "admin", "db", "upgrade"], env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr  # gw admin never creates a database: this does
    applied = subprocess.run(
        [*GW, "admin", "apply", *no_slurm, str(site)], env=env, capture_output=True, text=True
    )
    assert applied.returncode == 0, applied.stderr
    tokens = {
        user: subprocess.run(
            [*GW, "admin", "token", user, "--name", f"{prefix}-tests"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for user in users
    }
    log_path = state / "serve.log"
    url = f"http://127.0.0.1:{port}"
    process = Process([*GW, "serve", "--port", str(port), *serve_args], env, log_path, url)
    process.start()
    try:
        yield Serve(url, str(state / "none.toml"), log_path, account, tokens, applied.stdout, env, process)
    finally:
        process.stop()
        drain_accounts([account, f"{account}c", f"{account}o", f"{account}a", f"{account}b"])
        site.write_text(TEARDOWN_SITE)
        subprocess.run(
            [*GW, "admin", "apply", "--prune", str(site)], env=env, capture_output=True, check=False
        )
