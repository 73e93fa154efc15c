"""A cluster whose site-run slurmrestd is stuck: runs go stale, `gw serve` still stops, reconcile asks once.

The site lists a cluster ``stuck`` on a site-run slurmrestd (``restd.url``) that is a real unix-socket
server taking connections and never answering (tests/stuck_restd.py), and a run on it. With a 1 s
query limit, a refresh cycle ends within it: the cluster is down, its error naming the daemon and
the limit, and the run's attempt is stale (its last state kept, never failed). A real `gw serve`
with a 120 s limit (a call truly stuck while the signal comes) and a 1 s ``scheduler_stop_grace_s``
gets SIGTERM while its refresh waits on the socket: it exits within a generous bound, far less than
the call's own limit, saying which job it left. The reconciliation of three orphaned
``submitting`` attempts on that cluster asks the daemon once and leaves all three ``submitting``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from gateway.core.access.values import Principal
from gateway.core.runs.values import NewRun
from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.gw_serve import free_port
from tests.stuck_restd import StuckServer, stuck_server

GW = [sys.executable, "-m", "gateway.cli.main"]
SITE = """
allow_root_mapping: true
clusters:
  - {{name: gwlocal}}
  - name: stuck
    backend: rest
    restd: {{url: "{url}", jwt_key: "{key}"}}
users: [{{name: tester, os_user: root, admin: true}}]
projects:
  - name: hang
    slurm_account: gwthang
    members: [{{user: tester, role: lead}}]
    queues: [{{name: one, partition: cpu, cluster: stuck}}]
"""
OPERATOR = Principal.operator()
STOP_BOUND_S = 20  # generous: the grace is 1 s, the stuck call's own limit 120 s


def _run_on_stuck_cluster(settings: Settings, *, job_id: str | None = "4242") -> str:
    """A run of project hang whose attempt is on cluster stuck: with ``job_id`` (as a submission
    leaves it), else SUBMITTING (as a crash before sbatch answered leaves it)."""
    services = build_services(settings, upgrade=False)
    try:
        run_id = f"r-{uuid.uuid4().hex[:12]}"
        spec = build_spec({"name": "train", "project": "hang", "queue": "one", "command": "true"})
        store = services.runs.store
        store.create_run(
            NewRun(
                id=run_id,
                spec=spec,
                submitter="tester",
                os_user="root",
                script="#!/bin/bash\ntrue\n",
                script_sha256="1" * 64,
                template_name="single.sbatch.j2",
                template_version="abc",
                run_dir=str(settings.runs_dir / run_id),
                first_tag=f"gw-{run_id}-1",
                cluster="stuck",
            )
        )
        if job_id is not None:
            store.record_job_id(store.get_run(run_id).attempts[0].id, job_id)
        return run_id
    finally:
        services.close()


def _serve(env: dict[str, str], port: int, log) -> subprocess.Popen:  # noqa: ANN001 - a file
    """`gw serve` on ``port``, once it answers (GET /openapi.json asks no cluster)."""
    proc = subprocess.Popen(
        [*GW, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("gw serve did not come up")


def _wait(what: str, check, timeout_s: float = 20) -> None:  # noqa: ANN001 - a callable
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout_s} s")


def _stuck_site(tmp_path: Path, server: StuckServer, **settings: float) -> Settings:
    """A database whose site lists cluster stuck at ``server`` (applied without Slurm), and its settings."""
    key = tmp_path / "jwt.key"
    key.write_bytes(b"k" * 32)
    made = Settings(database_url=f"sqlite:///{tmp_path}/gateway.db", runs_dir=tmp_path / "runs", **settings)
    services = build_services(made)
    try:
        services.site.apply(OPERATOR, parse_site(SITE.format(url=server.url, key=key)), sync_slurm=False)
    finally:
        services.close()
    return made


def test_a_refresh_past_the_limit_marks_the_cluster_down_and_its_run_stale(tmp_path):
    with stuck_server(tmp_path / "stuck.sock") as server:
        settings = _stuck_site(tmp_path, server, slurm_query_timeout_s=1)
        run_id = _run_on_stuck_cluster(settings)
        services = build_services(settings, upgrade=False)
        try:
            started = time.monotonic()
            report = services.background.refresher.refresh()
            took = time.monotonic() - started
            attempt = services.runs.store.get_run(run_id).attempts[0]
            down = services.clusters.down("stuck")
        finally:
            services.close()
    assert server.requests, "the refresh never reached the stuck daemon"
    assert took < 5, f"the cycle took {took:.1f} s against a 1 s limit"
    assert report.down == ("stuck",) and report.stale == 1
    assert attempt.stale and attempt.state == RunState.QUEUED  # its last known state, never failed
    assert down is not None
    assert f"the daemon's socket {tmp_path / 'stuck.sock'} did not answer within 1 s" in down.error


def test_gw_serve_stops_within_a_bound_while_its_refresh_is_stuck(tmp_path):
    port = free_port()
    log_path = tmp_path / "serve.log"
    with stuck_server(tmp_path / "stuck.sock") as server, open(log_path, "a") as log:
        settings = _stuck_site(tmp_path, server)
        _run_on_stuck_cluster(settings)
        env = {
            **os.environ,
            "GATEWAY_DATABASE_URL": settings.database_url,
            "GATEWAY_RUNS_DIR": str(settings.runs_dir),
            "GATEWAY_REFRESH_INTERVAL_S": "1",
            "GATEWAY_SLURM_QUERY_TIMEOUT_S": "120",  # the call is truly stuck when SIGTERM comes
            "GATEWAY_SCHEDULER_STOP_GRACE_S": "1",
        }
        proc = _serve(env, port, log)
        try:
            _wait("a refresh reaching the stuck daemon", lambda: len(server.requests) > 0)
            time.sleep(0.5)  # well inside the 120 s call
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=STOP_BOUND_S + 30)
            took = time.monotonic() - started
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    said = log_path.read_text()
    print(f"gw serve stopped {took:.2f} s after SIGTERM")  # noqa: T201 - the measure, shown with -s
    assert took < STOP_BOUND_S, f"gw serve took {took:.1f} s to stop after SIGTERM: {said[-3000:]}"
    assert "stopping with refresh still running after 1 s" in said, said[-3000:]


def test_reconcile_asks_a_stuck_cluster_once_per_pass(tmp_path):
    with stuck_server(tmp_path / "stuck.sock") as server:
        settings = _stuck_site(
            tmp_path, server, slurm_query_timeout_s=0.5, slurm_submit_timeout_s=0.05, submit_grace_s=0.1
        )
        runs = [_run_on_stuck_cluster(settings, job_id=None) for _ in range(3)]
        time.sleep(0.2)  # older than submit_grace_s: orphans to look up
        services = build_services(settings, upgrade=False)
        try:
            started = time.monotonic()
            report = services.background.refresher.reconcile()
            took = time.monotonic() - started
            states = {services.runs.store.get_run(r).attempts[0].state for r in runs}
        finally:
            services.close()
    assert len(server.requests) == 1, f"the stuck daemon was asked {len(server.requests)} times"
    assert sorted(report.undecided) == sorted(f"gw-{r}-1" for r in runs)
    assert states == {RunState.SUBMITTING}
    assert took < 5, f"the pass took {took:.1f} s"
