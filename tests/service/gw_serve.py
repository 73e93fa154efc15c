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
from tests.service.conftest import SITE, drain_accounts, ensure_os_users

GW = [sys.executable, "-m", "gateway.cli.main"]


@dataclass(frozen=True)
class Serve:
    url: str
    config: str  # a GW_CONFIG path that does not exist: only GW_URL and GW_TOKEN count
    log: Path
    account: str  # project test's Slurm account (others add a suffix: o for other ...)
    tokens: dict[str, str]  # by gateway user
    applied: str  # what `gw admin apply` printed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def gw_serve(state: Path, *, prefix: str, users: Sequence[str] = ("tester",)) -> Iterator[Serve]:
    port = free_port()
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": f"sqlite:///{state}/gateway.db",
        "GATEWAY_RUNS_DIR": str(JOB_ROOT / f"{prefix}-runs-{port}"),
        "GATEWAY_REFRESH_INTERVAL_S": "1",
    }
    ensure_os_users()
    account = f"gwt{prefix}{port}"
    site = state / "site.yaml"
    site.write_text(SITE.format(account=account))
    applied = subprocess.run([*GW, "admin", "apply", str(site)], env=env, capture_output=True, text=True)
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
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [*GW, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"gw serve did not come up: {log_path.read_text()}")
    try:
        yield Serve(url, str(state / "none.toml"), log_path, account, tokens, applied.stdout)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        drain_accounts([account, f"{account}c", f"{account}o", f"{account}a", f"{account}b"])
        site.write_text("allow_root_mapping: true\nusers: []\nprojects: []\n")
        subprocess.run([*GW, "admin", "apply", str(site)], env=env, capture_output=True, check=False)
