"""A gateway that loses nothing: Slurm down, the database down, two gw serve on one database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from gateway.api import create_app
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from tests.conftest import JOB_ROOT, wait_for
from tests.service.conftest import POSTGRES_ADMIN_URL, PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]
DAEMON = ["bash", str(ROOT / "ansible/files/slurm-daemon")]
CTLD = ["slurmctld", "/run/slurm/slurmctld.pid"]


def start_slurmctld() -> None:
    subprocess.run(
        [*DAEMON, "start", *CTLD, "/var/log/slurm/slurmctld.log", "--", "/usr/sbin/slurmctld"], check=True
    )
    wait_for(
        lambda: subprocess.run(["scontrol", "ping"], capture_output=True, text=True).stdout.count("UP"),
        timeout_s=60,
        what="slurmctld to answer again",
    )


@pytest.mark.exclusive
def test_slurmctld_down_gives_stale_flags_not_failures_and_everything_is_recovered(services, principal):
    """The job ends while slurmctld is stopped: cycles meanwhile flag it stale and keep it RUNNING; the
    controller back, it is followed to its end.

    Waited for by events, not fixed sleeps: the job's own marker file says it ended (each cycle with
    the controller away is an squeue that gives up after about 9 s), then two such cycles run after its
    end, and the controller is started again at once.
    """
    marker = JOB_ROOT / f"outage-{uuid.uuid4().hex[:8]}"
    spec = build_spec(
        {
            "name": "outage",
            "project": PROJECT,
            "queue": "cpu",
            "command": f"sleep 6 && touch {marker}",
            "workdir": "/tmp",
            "tags": [unique_tag()],
            "resources": {"mem_gb": 0.1},
        }
    )
    run = services.runs.submit(spec, principal=principal)
    refresh_until(services, run.id, states={RunState.RUNNING})
    subprocess.run([*DAEMON, "stop", *CTLD], check=True)
    try:
        assert services.refresher.refresh().stale >= 1
        wait_for(marker.exists, timeout_s=60, what="the job to end while slurmctld is stopped")
        for _ in range(2):  # the job has ended; the gateway cannot know yet
            assert services.refresher.refresh().stale >= 1
        latest = services.runs.store.get_run(run.id).latest
        assert latest.stale and latest.state is RunState.RUNNING, latest
    finally:
        start_slurmctld()
    done = refresh_until(services, run.id, timeout_s=120)
    assert done.state is RunState.SUCCEEDED and not done.latest.stale
    assert [e.to_state for e in done.latest.events][-1] is RunState.SUCCEEDED
    assert done.latest.end_time and done.latest.elapsed_s >= 5
    marker.unlink()


def _postgres_only(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("runs on the PostgreSQL backend (SQLite has one writer and no connection limits)")


def test_database_unavailable_is_503_and_nothing_half_written(settings, services, database_url, tester_token):
    _postgres_only(database_url)
    name = database_url.rsplit("/", 1)[1]
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    before = len(services.runs.store.list_runs(RunFilter(limit=500)).items)
    with TestClient(create_app(services=services)) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
            conn.execute(
                text(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
            )
        services.db.engine.dispose()
        try:
            listed = client.get("/runs")  # even the token cannot be checked: 503, never 401 or 500
            assert listed.status_code == 503 and listed.json()["error"] == "database_unavailable"
            health = client.get("/healthz")
            assert health.status_code == 503 and health.json()["database"]["ok"] is False
            submitted = client.post(
                "/runs",
                json={"name": "x", "project": PROJECT, "queue": "cpu", "command": "true", "workdir": "/tmp"},
            )
            assert submitted.status_code == 503, submitted.text
            assert submitted.json()["error"] == "database_unavailable" and submitted.headers["Retry-After"]
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        assert client.get("/healthz").status_code == 200
    assert len(services.runs.store.list_runs(RunFilter(limit=500)).items) == before
    admin.dispose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_servers_share_one_database_one_runs_the_periodic_jobs(settings, services, database_url):
    _postgres_only(database_url)
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": database_url,
        "GATEWAY_RUNS_DIR": str(JOB_ROOT / f"two-{uuid.uuid4().hex[:6]}"),
        "GATEWAY_AUDIT_ANCHOR_PATH": str(settings.anchor_path),
        "GATEWAY_REFRESH_INTERVAL_S": "1",
        "GATEWAY_SUBMIT_GRACE_S": "5",
        "GATEWAY_SLURM_SUBMIT_TIMEOUT_S": "4",
    }
    servers = []
    for _ in range(2):
        port = free_port()
        log = JOB_ROOT / f"serve-{port}.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli.main", "serve", "--port", str(port)],
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        servers.append((proc, port, log))
    try:
        for _, port, _ in servers:
            wait_for(lambda p=port: _healthy(p), timeout_s=30, what=f"gw serve on {port}")
        time.sleep(3)
        leaders = [s for s in servers if "took the scheduler lease" in s[2].read_text()]
        assert len(leaders) == 1, [s[2].read_text()[-500:] for s in servers]
        leader = leaders[0]
        other = next(s for s in servers if s is not leader)
        leader[0].send_signal(signal.SIGKILL)
        leader[0].wait()
        wait_for(
            lambda: "took the scheduler lease" in other[2].read_text(),
            timeout_s=40,
            what="the other server to take over the periodic jobs",
        )
        assert _healthy(other[1])
    finally:
        for proc, _, _ in servers:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False
