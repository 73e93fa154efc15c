"""The gateway with a remote submit host: every Slurm command and job file goes over SSH.

A real sshd on loopback (``tests/sshd.py``) is the submit host; the gateway
logs in with each user's own key (per_user_key). The flows are the API's own:
submit, refresh, logs, cancel, a failing run classified; the job runs as the
mapped OS user. Killing the server mid-refresh leaves runs in their last
known state, flagged stale, until it is back. Runs once per database backend.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import RunState
from gateway.services import Services
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.conftest import JOB_ROOT, wait_for_accounting
from tests.service.conftest import (
    BACKENDS,
    OPERATOR,
    OS_USERS,
    SITE,
    TEARDOWN_SITE,
    drain_accounts,
    ensure_os_users,
    fresh_database,
    refresh_until,
    unique_tag,
)
from tests.service.gw_serve import GW, gw_serve
from tests.sshd import SshServer, ensure_home

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def server() -> Iterator[SshServer]:
    ensure_os_users()
    for user in OS_USERS:
        ensure_home(user)
    srv = SshServer(JOB_ROOT / f"sshd-gw-{uuid.uuid4().hex[:8]}", ["root", *OS_USERS])
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def gateway(request, server, tmp_path_factory) -> Iterator[tuple[Services, TestClient, dict[str, str]]]:
    runs_dir = JOB_ROOT / f"ssh-runs-{uuid.uuid4().hex[:8]}"
    runs_dir.mkdir(parents=True)
    runs_dir.chmod(0o1777)  # the submit host's runs_dir: each job user makes its run directories there
    env = server.settings()
    with fresh_database(request.param, tmp_path_factory.mktemp("db")) as url:
        settings = Settings(
            database_url=url,
            runs_dir=runs_dir,
            audit_anchor_path=tmp_path_factory.mktemp("anchor") / "anchors.jsonl",
            refresh_interval_s=1,
            submit_grace_s=30,
            slurm_submit_timeout_s=20,
            slurm_query_timeout_s=10,
            **{k.removeprefix("GATEWAY_").lower(): v for k, v in env.items()},
        )
        services = build_services(settings)
        account = f"gwt{uuid.uuid4().hex[:10]}"
        services.site.apply(OPERATOR, parse_site(SITE.format(account=account)))  # sacctmgr over SSH
        tokens = {
            user: services.auth.issue_token(OPERATOR, user, name="pytest")[0] for user in ("alice", "tester")
        }
        with TestClient(create_app(services=services)) as client:
            yield services, client, tokens
        drain_accounts([p.slurm_account for p in services.access.projects()])
        services.site.apply(OPERATOR, parse_site(TEARDOWN_SITE), prune=True)
        services.close()


def submit(client, token: str, **changes) -> dict:
    body = {
        "name": "ssh",
        "project": "pa",
        "queue": "cpu",
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
        **changes,
    }
    answer = client.post("/runs", json=body, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 201, answer.text
    return answer.json()


def auth(tokens, user="alice") -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens[user]}"}


def test_a_run_goes_through_the_submit_host_as_the_mapped_user(gateway):
    services, client, tokens = gateway
    run = submit(client, tokens["alice"], command="id -un; echo 'hello over ssh'")
    done = refresh_until(services, run["id"])
    assert done.state is RunState.SUCCEEDED, done.latest
    job_user = subprocess.run(
        ["sacct", "-nPX", "-j", done.latest.job_id, "-o", "User"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert done.os_user == "gwtalice" and job_user == ["gwtalice"]
    logs = client.get(f"/runs/{run['id']}/logs", headers=auth(tokens)).json()
    assert logs["text"].splitlines()[-2:] == ["gwtalice", "hello over ssh"]
    assert os.stat(done.run_dir).st_uid == int(subprocess.check_output(["id", "-u", "gwtalice"]))
    assert oct(os.stat(done.run_dir).st_mode & 0o777) == "0o700"


def test_a_failing_run_is_classified_from_files_read_over_ssh(gateway):
    services, client, tokens = gateway
    run = submit(client, tokens["alice"], command="echo boom >&2; exit 1")
    done = refresh_until(services, run["id"])
    failure = client.get(f"/runs/{run['id']}", headers=auth(tokens)).json()["attempts"][0]["failure"]
    assert done.state is RunState.FAILED
    assert failure["class"] == "user_code" and "boom" in failure["evidence"]["log_tail"]


def test_a_run_is_cancelled_over_ssh(gateway):
    services, client, tokens = gateway
    run = submit(client, tokens["alice"], command="sleep 120")
    refresh_until(services, run["id"], states={RunState.RUNNING})
    answer = client.post(f"/runs/{run['id']}/cancel", headers=auth(tokens))
    assert answer.status_code in (200, 202), answer.text
    assert refresh_until(services, run["id"]).state is RunState.CANCELLED


def test_a_dead_submit_host_leaves_runs_stale_in_their_last_state_until_it_returns(gateway, server, slurm):
    services, client, tokens = gateway
    run = submit(client, tokens["alice"], command="sleep 4; echo finished")
    job_id = refresh_until(services, run["id"], states={RunState.RUNNING}).latest.job_id
    server.kill()
    try:
        report = services.refresher.refresh()
        during = services.runs.store.get_run(run["id"])
        assert report.stale >= 1 and during.state is RunState.RUNNING and during.latest.stale
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json()["slurm"]["via"]["ok"] is False
        # the job ends meanwhile (Slurm says so); the gateway cannot know yet
        wait_for_accounting(slurm, job_id, timeout_s=60)
        services.refresher.refresh()
        assert services.runs.store.get_run(run["id"]).state is RunState.RUNNING
    finally:
        server.start()
    done = refresh_until(services, run["id"])
    assert done.state is RunState.SUCCEEDED and not done.latest.stale
    assert client.get("/healthz").status_code == 200


def test_health_shows_the_ssh_hop_and_its_latency(gateway, server):
    _, client, _ = gateway
    body = client.get("/healthz").json()
    via = body["slurm"]["via"]
    assert body["status"] == "ok" and via["ok"] and via["latency_ms"] > 0
    assert via["hop"] == f"ssh://root@127.0.0.1:{server.port} (per_user_key)"


def test_ssh_check_reports_which_mapped_users_can_log_in(gateway, server):
    services, _, _ = gateway
    (report,) = services.submit_host.check_logins(OPERATOR)  # the server-wide host, no cluster listed
    assert report.ok and report.service.user == "root" and report.clusters == ()
    assert [c.user for c in report.users] == ["gwtalice", "gwtbob", "root"]
    key = server.keys / "gwtbob"
    key.rename(key.with_suffix(".away"))
    try:
        env = {
            **os.environ,
            **server.settings(),
            "GATEWAY_DATABASE_URL": services.settings.database_url,
            "GATEWAY_AUDIT_ANCHOR_PATH": str(services.settings.anchor_path),
        }
        shown = subprocess.run(
            [sys.executable, "-m", "gateway.cli.main", "admin", "ssh-check"],
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        key.with_suffix(".away").rename(key)
    lines = shown.stdout.splitlines()
    assert shown.returncode == 69, shown
    assert any(line.startswith("ok  user gwtalice") and "ran as gwtalice" in line for line in lines), lines
    assert any(
        line.startswith("FAIL user gwtbob") and "cannot read the SSH key file" in line for line in lines
    )
    assert "2 of 3 mapped users can submit" in shown.stdout


def test_gw_health_prints_the_hop_with_its_latency(server, tmp_path):
    runs_dir = JOB_ROOT / f"ssh-serve-runs-{uuid.uuid4().hex[:8]}"
    runs_dir.mkdir(parents=True)
    runs_dir.chmod(0o1777)
    settings = {**server.settings(), "GATEWAY_RUNS_DIR": str(runs_dir)}
    with gw_serve(tmp_path, prefix="ssh", settings=settings, sync_slurm=False) as serve:
        env = {**os.environ, "GW_URL": serve.url, "GW_CONFIG": serve.config}
        shown = subprocess.run([*GW, "health"], env=env, capture_output=True, text=True)
    assert shown.returncode == 0, shown
    lines = shown.stdout.splitlines()
    assert lines[1].startswith("  database: ok in ") and lines[2].startswith("  slurm: ok in ")
    assert re.fullmatch(
        rf"    via ssh://root@127\.0\.0\.1:{server.port} \(per_user_key\): ok in [0-9.]+ ms", lines[3]
    ), lines
