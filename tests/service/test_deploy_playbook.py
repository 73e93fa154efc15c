"""The deployment play (ansible/deploy.yml) on this machine: twice, the second time changing nothing,
leaving a gateway that answers /healthz on PostgreSQL, its Slurm reached through an SSH submit host.

The instance gets names of its own (OS user, /opt, /etc, /var/log, database, port), so it stands
beside anything else here; the test removes all of it afterwards. It installs the package into a
fresh venv (pip), so it takes a few minutes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.conftest import JOB_ROOT
from tests.service.conftest import POSTGRES_ADMIN_URL
from tests.sshd import SshServer, free_port

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = [
    str(Path(sys.executable).with_name("ansible-playbook")),
    "-i",
    str(ROOT / "ansible" / "inventory.ini"),
    str(ROOT / "ansible" / "deploy.yml"),
]
SITE = "allow_root_mapping: true\nusers: [{name: admin, os_user: root, admin: true}]\nprojects: []\n"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    if shutil.which("psql") is None:
        pytest.fail("psql is missing: run scripts/postgres-ready (make test does)")
    state = tmp_path_factory.mktemp("deploy")
    server = SshServer(JOB_ROOT / f"sshd-deploy-{uuid.uuid4().hex[:8]}", ["root"])
    server.start()
    instance = f"gwtdeploy{uuid.uuid4().hex[:6]}"
    port = free_port()
    site = state / "site.yaml"
    site.write_text(SITE)
    variables = {
        "gateway_instance": instance,
        "gateway_source": str(ROOT),
        "gateway_port": port,
        "gateway_supervisor": "script",
        "gateway_site_file": str(site),
        "gateway_site_sync_slurm": False,
        "gateway_submit_host": "127.0.0.1",
        "gateway_ssh_port": server.port,
        "gateway_ssh_service_user": "root",
        "gateway_ssh_service_key_src": str(server.keys / "root"),
        "gateway_ssh_known_hosts_src": str(server.known_hosts),
        "gateway_runs_dir": str(JOB_ROOT / f"{instance}-runs"),
    }
    (state / "vars.json").write_text(json.dumps(variables))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
    runs = []
    try:
        for _ in range(2):
            runs.append(
                subprocess.run(
                    [*PLAYBOOK, "-e", f"@{state / 'vars.json'}"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=1500,
                    check=False,
                )
            )
            assert runs[-1].returncode == 0, runs[-1].stdout[-6000:] + runs[-1].stderr[-3000:]
        yield instance, port, runs
    finally:
        remove(instance)
        server.stop()


def remove(instance: str) -> None:
    """Take the instance away again: supervisor, files, OS user, database and role."""
    ctl = Path(f"/opt/{instance}/bin/gatewayctl")
    if ctl.exists():
        subprocess.run([str(ctl), "stop"], capture_output=True, check=False, timeout=60)
    for path in (f"/opt/{instance}", f"/etc/{instance}", f"/var/lib/{instance}", f"/var/log/{instance}",
                 f"/run/{instance}", str(JOB_ROOT / f"{instance}-runs")):  # fmt: skip
        shutil.rmtree(path, ignore_errors=True)
    Path(f"/etc/logrotate.d/{instance}").unlink(missing_ok=True)
    subprocess.run(["userdel", instance], capture_output=True, check=False)
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{instance}" WITH (FORCE)'))
        conn.execute(text(f'DROP ROLE IF EXISTS "{instance}"'))
    admin.dispose()


def recap(output: str) -> dict[str, int]:
    (line,) = [line for line in output.splitlines() if line.startswith("localhost ") and "ok=" in line]
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", line)}


def test_the_second_run_changes_nothing(deployed):
    _, _, (first, second) = deployed
    assert recap(first.stdout)["changed"] > 0 and recap(first.stdout)["failed"] == 0
    assert recap(second.stdout)["changed"] == 0, second.stdout[-6000:]


def test_the_gateway_answers_on_postgresql_through_the_ssh_hop(deployed):
    instance, port, _ = deployed
    health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
    assert health.status_code == 200, health.text
    body = health.json()
    assert body["status"] == "ok" and body["slurm"]["via"]["hop"].startswith("ssh://root@127.0.0.1:")
    env = Path(f"/etc/{instance}/gateway.env").read_text()
    assert f"GATEWAY_DATABASE_URL=postgresql+psycopg://{instance}:" in env
    admin = create_engine(POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{instance}")
    with admin.connect() as conn:  # the schema is there, and the site file's admin
        assert conn.execute(text("SELECT name FROM users")).scalars().all() == ["admin"]
    admin.dispose()


def test_secrets_and_keys_have_tight_modes_and_the_service_runs_as_its_own_user(deployed):
    instance, port, _ = deployed
    modes = {
        f"/etc/{instance}/gateway.env": 0o640,
        f"/etc/{instance}/db.password": 0o600,
        f"/etc/{instance}/web_session.key": 0o600,
        f"/etc/{instance}/ssh": 0o700,
        f"/etc/{instance}/ssh/service_key": 0o600,
    }
    for path, mode in modes.items():
        assert os.stat(path).st_mode & 0o777 == mode, path
    key = Path(f"/etc/{instance}/web_session.key").read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", key)  # generated once (the second run changed nothing)
    assert f"GATEWAY_WEB_SESSION_KEY={key}\n" in Path(f"/etc/{instance}/gateway.env").read_text()
    status = subprocess.run([f"/opt/{instance}/bin/gatewayctl", "status"], capture_output=True, text=True)
    assert status.stdout.startswith("running ")
    listeners = subprocess.run(["ps", "-ww", "-o", "args=", "-u", instance], capture_output=True, text=True)
    assert f"--port {port}" in listeners.stdout  # gw serve, as the service's user
    assert "    copytruncate" in Path(f"/etc/logrotate.d/{instance}").read_text().splitlines()


def web_session(instance: str, port: int) -> httpx.Client:
    """A client signed in to the deployed gateway's pages (with a new token of its admin)."""
    token = subprocess.run(
        [f"/opt/{instance}/bin/gatewayctl", "gw", "admin", "token", "admin", "--name", "deploy-web"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    login = client.get("/ui/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', login.text)
    assert csrf, login.text
    signed = client.post("/ui/login", data={"csrf": csrf.group(1), "token": token})
    assert signed.status_code == 303, signed.text
    return client


def test_the_supervisor_restarts_a_crashed_api(deployed):
    """A browser's session outlives the restart: the key comes from the host's key file."""
    instance, port, _ = deployed
    browser = web_session(instance, port)
    assert 'id="signed-in-as">admin<' in browser.get("/ui/runs").text
    pids = subprocess.run(
        ["pgrep", "-u", instance, "-f", f"serve .*--port {port}"], capture_output=True, text=True
    )
    (pid,) = pids.stdout.split()
    os.kill(int(pid), 9)
    for _ in range(60):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        subprocess.run(["sleep", "0.5"], check=False)
    else:
        pytest.fail("the API did not come back after a kill -9")
    log = Path(f"/var/log/{instance}/serve.log").read_text()
    assert "restarting in 2 s" in log
    again = browser.get("/ui/runs", follow_redirects=False)
    assert again.status_code == 200 and 'id="signed-in-as">admin<' in again.text, again.text[:500]
