"""A cluster reached through its own backend (docs/clusters.md): gwlocal2 on slurmrestd (the gateway's own
daemons, or the site-run one with JWT), and gwlocal2 through an SSH submit host of its own, each beside
gwlocal on the CLI.

Each way (``rest``, ``ssh``) gets its own database and site: cluster gwlocal (``-M gwlocal``, the server's
runner) and gwlocal2, either ``backend: rest`` with gwlocal2's ``slurm_conf`` (the gateway starts one
slurmrestd per user for that cluster, ``SLURM_CONF`` its slurm.conf) or with a ``submit_host`` (a real sshd on
loopback, tests/sshd.py: the commands log in as the job's user with its key and carry ``-M gwlocal2``).
alice is mapped to the OS user gwtalice: slurmrestd will not run as root. What is checked against Slurm's own
multi-cluster commands: the job is in ``squeue -M gwlocal2``/``sacct -M gwlocal2`` with its tag, as
gwtalice, and never in gwlocal's; submission, refresh, cancel and accounting reads went through that cluster's
daemon or host. The ``site`` way reaches the daemon the playbook runs for gwlocal2 (rest_auth/jwt on
127.0.0.1:6830) with tokens the gateway signs with gwlocal2's key: no daemon is started by the gateway.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.adapters.runner_metered import MeteredRunner
from gateway.adapters.runner_ssh import SshRunner
from gateway.adapters.slurm.rest import SlurmRest
from gateway.adapters.slurm.restd_site import SiteRestd
from gateway.api.app import create_app
from gateway.cli.output import health_lines
from gateway.core.access.values import Principal
from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import RunState
from gateway.store.accounting.accounting import RecordFilter
from gateway.wiring import build_services
from tests.conftest import JOB_ROOT
from tests.service.clusters_setup import (
    C2_CONF,
    C2_JWT_KEY,
    C2_RESTD_URL,
    dead_copy,
    free_port,
    require_c2,
    require_site_restd,
)
from tests.service.conftest import (
    TEARDOWN_SITE,
    drain_accounts,
    ensure_os_users,
    fresh_database,
    refresh_until,
    unique_tag,
)
from tests.sshd import SshServer

pytestmark = pytest.mark.slurm

OPERATOR = Principal.operator()
SITE = """
allow_root_mapping: true
clusters:
  - {{name: gwlocal}}
  - {c2}
users:
  - {{name: tester, os_user: root, admin: true}}
  - {{name: alice, os_user: gwtalice}}
projects:
  - name: mcb
    slurm_account: {account}
    members: [{{user: tester, role: lead}}, {{user: alice, role: member}}]
    queues:
      - {{name: one, partition: cpu}}
      - {{name: two, partition: cpu, cluster: gwlocal2}}
"""


def c2_entry(way: str, server: SshServer) -> str:
    """gwlocal2's cluster entry for ``way``: slurmrestd with its slurm.conf, the site-run slurmrestd, or its
    own submit host."""
    if way == "rest":
        return json.dumps({"name": "gwlocal2", "backend": "rest", "slurm_conf": str(C2_CONF)})
    if way == "site":
        restd = {"url": C2_RESTD_URL, "jwt_key": str(C2_JWT_KEY), "token_lifespan_s": 60}
        return json.dumps({"name": "gwlocal2", "backend": "rest", "restd": restd})
    host = {
        "host": "127.0.0.1",
        "port": server.port,
        "known_hosts": str(server.known_hosts),
        "service_user": "root",
        "service_key": str(server.keys / "root"),
        "user_keys": f"{server.keys}/{{user}}",
    }
    return json.dumps({"name": "gwlocal2", "submit_host": host})


def _sacctmgr(*args: str) -> None:
    subprocess.run(["sacctmgr", "-i", *args], capture_output=True, text=True, check=False, timeout=60)


@pytest.fixture(scope="module", params=["rest", "ssh", "site"])
def world(request, backend, settings, ssh_server, tmp_path_factory) -> Iterator[dict]:
    """The gateway on its own database with gwlocal2 reached the ``request.param`` way."""
    require_c2()  # skipped where gwlocal2 is not set up, failed (saying why) where it does not answer
    if request.param == "site":
        require_site_restd()  # skipped where the playbook did not set up its slurmrestd
    ensure_os_users()
    runs_dir = JOB_ROOT / f"mcb-runs-{uuid.uuid4().hex[:8]}"
    runs_dir.mkdir(parents=True)
    runs_dir.chmod(0o1777)  # gwtalice makes her run directories there
    sockets = Path(f"/tmp/gw-restd-mcb-{uuid.uuid4().hex[:8]}")
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, sockets, True)  # last: after the daemons were stopped
        url = stack.enter_context(fresh_database(backend, tmp_path_factory.mktemp("mcb-db")))
        own = settings.model_copy(
            update={
                "database_url": url,
                "runs_dir": runs_dir,
                "audit_anchor_path": tmp_path_factory.mktemp("mcb-anchor") / "anchors.jsonl",
                "slurm_query_timeout_s": 20.0,
                "slurm_submit_timeout_s": 20.0,
                "slurmrestd_socket_dir": sockets,
                "ssh_connect_timeout_s": 5.0,
            }
        )
        built = build_services(own)
        stack.callback(built.close)
        account = f"gwt{uuid.uuid4().hex[:10]}"
        site = SITE.format(c2=c2_entry(request.param, ssh_server), account=account)
        built.site.apply(OPERATOR, parse_site(site))
        stack.callback(built.site.apply, OPERATOR, parse_site(TEARDOWN_SITE), prune=True)
        stack.callback(drain_accounts, [account])
        # as test_clusters does: the account and gwtalice on gwlocal2 whatever the apply pushed there
        _sacctmgr("add", "account", account, "cluster=gwlocal2", "description=gateway-test")
        _sacctmgr("add", "user", "gwtalice", f"account={account}", "cluster=gwlocal2")
        stack.callback(_sacctmgr, "delete", "account", f"name={account}", "cluster=gwlocal2")
        stack.callback(_sacctmgr, "delete", "user", "gwtalice", f"account={account}", "cluster=gwlocal2")
        stack.callback(_scancel, account)
        token = built.auth.issue_token(OPERATOR, "alice", name="pytest")[0]
        with TestClient(create_app(services=built)) as api:
            api.headers["Authorization"] = f"Bearer {token}"
            yield {"way": request.param, "services": built, "api": api, "account": account}


def _scancel(account: str) -> None:
    for cluster in ("gwlocal", "gwlocal2"):
        subprocess.run(["scancel", "-M", cluster, f"--account={account}"], capture_output=True, check=False)


def spec(command: str, queue: str = "two") -> dict:
    return {
        "name": "mcb",
        "project": "mcb",
        "queue": queue,
        "command": command,
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
    }


def squeue_tags(cluster: str, account: str) -> dict[str, str]:
    """{job id: comment} of ``account``'s live jobs in ``squeue -M cluster``."""
    out = subprocess.run(
        ["squeue", "-M", cluster, "-h", f"--account={account}", "-o", "%i|%k"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout  # fmt: skip
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def sacct_lines(cluster: str, account: str, since: datetime) -> list[dict[str, str]]:
    """``account``'s allocations in ``sacct -M cluster`` since ``since``."""
    fields = ["JobID", "Cluster", "User", "State", "Comment"]
    out = subprocess.run(
        ["sacct", "-M", cluster, "-X", "-n", "-P", f"--accounts={account}",
         "-S", f"{since:%Y-%m-%dT%H:%M:%S}", "-o", ",".join(fields)],
        capture_output=True, text=True, check=True, timeout=30, env={"TZ": "UTC", "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    return [dict(zip(fields, line.split("|"), strict=False)) for line in out.splitlines() if line]


def settled(cluster: str, account: str, since: datetime, job_id: str, state: str) -> dict[str, str]:
    """The sacct line of ``job_id`` on ``cluster`` once it reads ``state`` (slurmdbd writes a moment late)."""
    deadline = time.monotonic() + 60
    while True:
        lines = [row for row in sacct_lines(cluster, account, since) if row["JobID"] == job_id]
        if lines and lines[-1]["State"].startswith(state):
            return lines[-1]
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct -M {cluster} -j {job_id}: {lines}, not {state}")
        time.sleep(1)


def assert_through_its_way(world: dict) -> None:
    """gwlocal2's commands went through its own daemon (with its slurm.conf) or its own submit host."""
    backend = world["services"].clusters.get("gwlocal2").backend
    if world["way"] == "site":
        assert isinstance(backend, SlurmRest) and isinstance(backend.daemons, SiteRestd)
        assert backend.daemons.url == C2_RESTD_URL  # the site's daemon; the gateway started none
    elif world["way"] == "rest":
        assert isinstance(backend, SlurmRest)
        pid = backend.daemons.running()["gwtalice"]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"SLURM_CONF={C2_CONF}".encode() in environ  # this daemon talks to gwlocal2's slurmctld
        gwlocal = world["services"].clusters.get("gwlocal").backend
        assert not isinstance(gwlocal, SlurmRest) or "gwtalice" not in gwlocal.daemons.running()
    else:
        runner = backend.runner
        assert isinstance(runner, MeteredRunner) and isinstance(runner.inner, SshRunner)
        assert runner.inner.pool.target.port == world["services"].clusters.listed()[1].submit_host.port
        assert "gwtalice" in runner.inner.pool.logins()  # she logged in there with her own key
        assert not isinstance(world["services"].clusters.get("gwlocal").backend.runner, SshRunner)


def test_a_run_on_gwlocal2_goes_through_its_own_backend_and_only_there(world):
    services, api, account = world["services"], world["api"], world["account"]
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    answer = api.post("/runs", json=spec('echo "on $SLURM_CLUSTER_NAME as $(id -un)"; sleep 4'))
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["attempts"][0]["cluster"] == "gwlocal2"
    run = services.runs.store.get_run(body["id"])
    job_id, tag = run.latest.job_id, run.latest.tag
    assert job_id and tag
    live = squeue_tags("gwlocal2", account)
    assert job_id in live and tag in live[job_id], live  # squeue -M gwlocal2 has it, with its tag
    assert not any(tag in comment for comment in squeue_tags("gwlocal", account).values())
    assert_through_its_way(world)
    ended = refresh_until(services, run.id, timeout_s=120)
    assert ended.state is RunState.SUCCEEDED, ended.latest
    assert "on gwlocal2 as gwtalice" in api.get(f"/runs/{run.id}/logs").json()["text"]
    line = settled("gwlocal2", account, since, job_id, "COMPLETED")
    assert line["Cluster"] == "gwlocal2" and line["User"] == "gwtalice" and tag in line["Comment"]
    assert not any(tag in row["Comment"] for row in sacct_lines("gwlocal", account, since))
    # the accounting read goes to gwlocal2 too: its record, as gwtalice, exit 0
    (record,) = [r for r in services.clusters.get("gwlocal2").accounting([job_id]) if r.job_id == job_id]
    assert record.user == "gwtalice" and record.exit_code == 0 and record.state is RunState.SUCCEEDED
    assert {step.node_list for step in record.steps} <= {"e1", "e2"}  # gwlocal2's cpu nodes
    # and the ingest keys it by gwlocal2
    counts = services.accounting.ingest(since=since)
    assert not any(c.error for c in counts.clusters), counts
    mine = [r.record for r in services.accounting.store.records(RecordFilter(job_ids=[job_id]))]
    assert [r.cluster for r in mine if r.user == "gwtalice" and r.account == account] == ["gwlocal2"]


def test_a_run_on_gwlocal2_is_cancelled_there(world):
    services, api, account = world["services"], world["api"], world["account"]
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    answer = api.post("/runs", json=spec("sleep 300"))
    assert answer.status_code == 201, answer.text
    run_id = answer.json()["id"]
    refresh_until(services, run_id, states={RunState.RUNNING, RunState.QUEUED})
    cancelled = api.post(f"/runs/{run_id}/cancel")
    assert cancelled.status_code in (200, 202), cancelled.text
    ended = refresh_until(services, run_id, timeout_s=120)
    assert ended.state is RunState.CANCELLED, ended.latest
    assert settled("gwlocal2", account, since, ended.latest.job_id, "CANCELLED")["User"] == "gwtalice"


def test_a_run_on_gwlocal_beside_it_stays_on_gwlocal(world):
    """The first cluster's queue is untouched by gwlocal2's way: the server's CLI, -M gwlocal."""
    services, api, account = world["services"], world["api"], world["account"]
    answer = api.post("/runs", json=spec("echo on $SLURM_CLUSTER_NAME", queue="one"))
    assert answer.status_code == 201, answer.text
    run = services.runs.store.get_run(answer.json()["id"])
    assert run.latest.cluster == "gwlocal"
    ended = refresh_until(services, run.id, timeout_s=120)
    assert ended.state is RunState.SUCCEEDED, ended.latest
    assert "on gwlocal\n" in api.get(f"/runs/{run.id}/logs").json()["text"]
    assert ended.latest.tag not in "".join(squeue_tags("gwlocal2", account).values())


def test_a_submit_host_whose_key_is_unknown_is_down_and_refuses_only_its_queue(world, tmp_path):
    """A cluster entry whose submit host's key is not in its known_hosts: the health check marks that
    cluster down with the SSH refusal (its SHA256 fingerprint), a submission to its queue is a 503 naming
    it, never a 500; the other clusters' queues submit."""
    if world["way"] != "ssh":
        pytest.skip("a submit host's own check")
    services, api = world["services"], world["api"]
    real = services.site.export(OPERATOR).model_dump(mode="json")
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    bad = {**real["clusters"][1], "name": "gwbadkey", "slurm_name": "gwlocal2"}
    bad["submit_host"] = {**bad["submit_host"], "host": "localhost", "known_hosts": str(empty)}
    broken = json.loads(json.dumps(real))
    broken["clusters"].append(bad)
    broken["projects"][0]["queues"].append({"name": "bad", "partition": "cpu", "cluster": "gwbadkey"})
    services.site.apply(OPERATOR, parse_site(json.dumps(broken)), sync_slurm=False)
    try:
        health = api.get("/healthz").json()
        check = health["clusters"]["gwbadkey"]
        assert check["ok"] is False and "SHA256:" in json.dumps(check), check
        assert check["via"]["hop"].startswith("ssh://root@localhost:") and "SHA256:" in check["via"]["error"]
        assert health["clusters"]["gwlocal2"]["ok"] is True
        hosts = {r.clusters: r for r in services.submit_host.check_logins(OPERATOR)}
        assert list(hosts) == [("gwlocal2",), ("gwbadkey",)] and hosts[("gwlocal2",)].ok
        assert not hosts[("gwbadkey",)].ok and "SHA256:" in hosts[("gwbadkey",)].service.detail
        shown = ssh_check(services)
        assert shown.returncode == 69, shown
        bad = shown.stdout.split("for cluster gwbadkey")[1]
        assert "FAIL service root" in bad and "localhost" in bad and "SHA256:" in bad, shown.stdout
        refused = api.post("/runs", json=spec("true", queue="bad"))
        assert refused.status_code == 503, refused.text
        assert "cluster gwbadkey is not answering" in refused.json()["detail"]
        ok = api.post("/runs", json=spec("true"))
        assert ok.status_code == 201, ok.text
    finally:
        services.site.apply(OPERATOR, parse_site(json.dumps(real)), sync_slurm=False)


def test_a_site_daemon_refusing_the_token_or_down_is_down_and_refuses_only_its_queue(world, tmp_path):
    """gwlocal2's site-run slurmrestd reached with a wrong JWT key (gwbadkey: slurmctld refuses the
    token) or at a port nothing listens on (gwnorestd): the health check marks each down, a submission
    to its queue is a 503 naming it, never a 500, and no token appears in what is said; gwlocal2 and
    gwlocal go on."""
    if world["way"] != "site":
        pytest.skip("a site-run slurmrestd's own check")
    services, api = world["services"], world["api"]
    real = services.site.export(OPERATOR).model_dump(mode="json")
    wrong = tmp_path / "wrong.key"
    wrong.write_bytes(b"not-the-key-of-gwlocal2-at-all!!")
    restd = real["clusters"][1]["restd"]
    broken = json.loads(json.dumps(real))
    copy = tmp_path / "c2-copy"
    copy.mkdir()
    broken["clusters"] += [  # each its own slurm.conf for the CLI reads: a site file reaches a cluster once
        {**real["clusters"][1], "name": "gwbadkey", "slurm_conf": str(C2_CONF),
         "restd": {**restd, "jwt_key": str(wrong)}},
        {**real["clusters"][1], "name": "gwnorestd", "slurm_conf": str(dead_copy(copy)),
         "restd": {**restd, "url": f"http://127.0.0.1:{free_port()}"}},
    ]  # fmt: skip
    broken["projects"][0]["queues"] += [
        {"name": "badkey", "partition": "cpu", "cluster": "gwbadkey"},
        {"name": "norestd", "partition": "cpu", "cluster": "gwnorestd"},
    ]
    services.site.apply(OPERATOR, parse_site(json.dumps(broken)), sync_slurm=False)
    try:
        health = api.get("/healthz").json()
        said = json.dumps(health)
        assert health["clusters"]["gwbadkey"]["ok"] is False, health["clusters"]["gwbadkey"]
        assert "check restd.jwt_key" in health["clusters"]["gwbadkey"]["error"]  # slurmctld refused it
        assert health["clusters"]["gwnorestd"]["ok"] is False
        assert "takes no connection" in health["clusters"]["gwnorestd"]["error"]
        assert health["clusters"]["gwlocal2"]["ok"] is True and health["clusters"]["gwlocal"]["ok"] is True
        for queue, cluster in (("badkey", "gwbadkey"), ("norestd", "gwnorestd")):
            refused = api.post("/runs", json=spec("true", queue=queue))
            assert refused.status_code == 503, refused.text
            assert f"cluster {cluster} is not answering" in refused.json()["detail"]
            said += refused.text
        assert "eyJ" not in said  # a JWT begins with the base64 of '{"': none was shown
        for queue in ("two", "one"):
            ok = api.post("/runs", json=spec("true", queue=queue))
            assert ok.status_code == 201, ok.text
    finally:
        services.site.apply(OPERATOR, parse_site(json.dumps(real)), sync_slurm=False)


def ssh_check(services) -> subprocess.CompletedProcess:
    """``gw admin ssh-check`` as a process on the gateway host, with ``services``' database."""
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": services.settings.database_url,
        "GATEWAY_AUDIT_ANCHOR_PATH": str(services.settings.anchor_path),
    }
    command = [sys.executable, "-m", "gateway.cli.main", "admin", "ssh-check"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_a_clusters_own_submit_host_is_in_health_and_ssh_check(world, ssh_server):
    """gwlocal2's own submit host: /healthz's gwlocal2 check carries its hop (where, ok, latency), gw health
    prints it under that cluster's line, gwlocal (this machine) has none; ``gw admin ssh-check`` logs in
    there as the service user and each mapped user, naming the cluster it serves."""
    if world["way"] != "ssh":
        pytest.skip("a submit host's own check")
    services, api = world["services"], world["api"]
    hop = f"ssh://root@127.0.0.1:{ssh_server.port} (per_user_key)"
    health = api.get("/healthz").json()
    via = health["clusters"]["gwlocal2"]["via"]
    assert via["hop"] == hop and via["ok"] and via["latency_ms"] > 0, health
    assert health["clusters"]["gwlocal"]["via"] is None and health["slurm"]["via"] is None
    lines = health_lines(health)
    at = lines.index(next(line for line in lines if line.startswith("  cluster gwlocal2: ok")))
    assert lines[at + 1].startswith(f"    via {hop}: ok in "), lines
    (report,) = services.submit_host.check_logins(OPERATOR)
    assert report.clusters == ("gwlocal2",) and report.hop == hop and report.ok, report
    assert [c.user for c in report.users] == ["gwtalice", "root"]
    shown = ssh_check(services)
    assert shown.returncode == 0, shown
    assert shown.stdout.startswith(f"submit host: {hop} for cluster gwlocal2\n"), shown.stdout
    assert "ok  user gwtalice" in shown.stdout and "2 of 2 mapped users can submit" in shown.stdout
