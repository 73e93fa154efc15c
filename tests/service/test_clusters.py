"""Several Slurm clusters behind one gateway (docs/clusters.md), on the two real local clusters.

The gateway, its own database and site (gwlocal, gwlocal2 and the dead gwdead) and gwlocal2's check
are in ``tests/service/clusters_setup.py``: where gwlocal2 is not set up the tests are skipped, where
it is set up but does not answer they fail saying so. Health and usage gauges per cluster are in
``test_clusters_ops.py``.

The "stop gwlocal2's slurmctld for a minute" check is ``test_stopped_controller`` at the end,
marked ``exclusive``: it stops a real daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.errors import SlurmUnavailable
from tests.service.clusters_setup import (
    C2_CONF,
    C2_ENV,
    OPERATOR,
    dead_copy,
    refresh_until,
    refresh_until_running,
    sacct_state,
    spec,
)
from tests.service.conftest import BACKENDS

pytestmark = pytest.mark.slurm


def test_site_file_names_clusters(multi):
    assert multi.clusters.names() == ["gwlocal", "gwlocal2", "gwdead"]
    exported = multi.site.export(OPERATOR)
    assert [c.name for c in exported.clusters] == ["gwlocal", "gwlocal2", "gwdead"]
    queues = {q.name: q.cluster for q in exported.projects[0].queues}
    assert queues == {"dead": "gwdead", "one": None, "two": "gwlocal2", "gpu2": "gwlocal2"}


def test_a_run_on_each_cluster_end_to_end(api, multi):
    """Each run's job is on its queue's cluster, runs there, succeeds, and its log reads back."""
    runs = {}
    for queue in ("one", "two"):
        answer = api.post("/runs", json=spec(queue, f"echo hello from $SLURM_CLUSTER_NAME {queue}"))
        assert answer.status_code == 201, answer.text
        runs[queue] = answer.json()
    assert runs["one"]["attempts"][0]["cluster"] == "gwlocal"
    assert runs["two"]["attempts"][0]["cluster"] == "gwlocal2"
    ended = refresh_until(multi, [r["id"] for r in runs.values()])
    for queue, run in runs.items():
        assert ended[run["id"]].state is RunState.SUCCEEDED, ended[run["id"]].latest
        logs = api.get(f"/runs/{run['id']}/logs").json()
        cluster = "gwlocal" if queue == "one" else "gwlocal2"
        assert f"hello from {cluster} {queue}" in logs["text"]
    # each job is known to its own cluster's accounting
    job_two = ended[runs["two"]["id"]].latest.job_id
    assert sacct_state(job_two, C2_ENV) == "COMPLETED"
    listed = api.get("/runs", params={"cluster": "gwlocal2", "project": "mc"}).json()["items"]
    assert runs["two"]["id"] in [r["id"] for r in listed]
    assert runs["one"]["id"] not in [r["id"] for r in listed]
    assert listed[0]["cluster"] == "gwlocal2"
    unknown = api.get("/runs", params={"cluster": "nosuch"})
    assert unknown.status_code == 404 and "gwlocal2" in unknown.json()["detail"]
    view = api.get("/queue", params={"cluster": "gwlocal2"}).json()
    assert {p["cluster"] for p in view["partitions"]} == {"gwlocal2"}
    assert "e1" in {n["name"] for p in view["partitions"] for n in p["nodes"]}


def test_a_projects_usage_is_asked_of_one_cluster(api, multi):
    """GET /projects/{p}/usage?cluster=: each cluster enforces the caps on its own associations, so a
    job of the project on gwlocal2 is counted there and not on gwlocal; an unknown cluster is a 404
    naming the clusters."""
    run = api.post("/runs", json=spec("two", "sleep 20")).json()
    try:
        deadline = time.monotonic() + 60
        while True:
            there = api.get("/projects/mc/usage", params={"cluster": "gwlocal2"}).json()
            if there["jobs_in_queue"]["used"] >= 1 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert there["jobs_in_queue"]["used"] == 1, there
        here = api.get("/projects/mc/usage", params={"cluster": "gwlocal"}).json()
        assert here["jobs_in_queue"]["used"] == 0, here
        assert api.get("/projects/mc/usage").json()["jobs_in_queue"] == here["jobs_in_queue"]  # the first
        unknown = api.get("/projects/mc/usage", params={"cluster": "nowhere"})
        assert unknown.status_code == 404 and "gwlocal, gwlocal2, gwdead" in unknown.text, unknown.text
    finally:
        api.post(f"/runs/{run['id']}/cancel")


def test_same_job_id_on_both_clusters_never_confused(multi, principal_mc):
    """A gateway run on one cluster and a held raw job on the other carry the same job id: the refresh
    keeps the run's own state (succeeded), never the other job's (pending)."""
    from gateway.core.spec.run_spec import build_spec

    run = multi.runs.submit(build_spec(spec("one", "sleep 3")), principal=principal_mc)
    job_id, other_env = run.latest.job_id, C2_ENV
    assert job_id is not None
    raw = _c2_job_with_id(job_id)
    if raw is None:  # gwlocal2 counts past it: the gateway's run goes to gwlocal2, the raw job to gwlocal
        run = multi.runs.submit(build_spec(spec("two", "sleep 3")), principal=principal_mc)
        job_id, other_env = run.latest.job_id, {**os.environ}
        raw = _local_job_with_id(job_id)
    assert raw == job_id, f"no job with id {job_id} could be made on the other cluster"
    try:
        ended = refresh_until(multi, [run.id])[run.id]
        assert ended.state is RunState.SUCCEEDED, ended.latest
        assert ended.latest.job_id == job_id
        live = subprocess.run(
            ["squeue", "-h", "-j", job_id, "-o", "%T"], env=other_env, capture_output=True, text=True
        ).stdout.strip()
        assert live == "PENDING"  # the other cluster's job with that id is still there, held
    finally:
        subprocess.run(["scancel", job_id], env=other_env, check=False)


HELD = ["sbatch", "--parsable", "-H", "-p", "cpu", "-t", "1", "-o", "/dev/null", "--wrap", "true"]


def _c2_job_with_id(job_id: str) -> str | None:
    """A held job on gwlocal2 with id ``job_id`` (its job id floor raised to it: docs/cluster.md), or
    None when gwlocal2 already counts past it."""
    jobid_conf = C2_CONF.parent / "jobid.conf"
    for _ in range(3):
        jobid_conf.write_text(f"FirstJobId={job_id}\n")
        subprocess.run(["scontrol", "reconfigure"], env=C2_ENV, check=True, capture_output=True)
        got = subprocess.run(HELD, env=C2_ENV, capture_output=True, text=True, check=True).stdout
        got = got.strip().split(";")[0]
        if got == job_id:
            return got
        subprocess.run(["scancel", got], env=C2_ENV, check=False)
        if int(got) > int(job_id):
            return None
    return None


def _local_job_with_id(job_id: str, most: int = 400) -> str | None:
    """A held job on gwlocal with id ``job_id``, reached by submitting (and cancelling) held jobs until
    gwlocal's counter gets there (gwlocal's configuration is never touched); None past ``most`` jobs."""
    for _ in range(most):
        got = subprocess.run(HELD, capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
        if got == job_id:
            return got
        subprocess.run(["scancel", got], check=False)
        if int(got) > int(job_id):
            return None
    return None


def test_dead_cluster_refuses_its_queue_and_no_other(multi, principal_mc, api):
    """gwdead's controller does not answer: the health check marks it down, its queue refuses with a
    message naming it, its queue, and the open ones; health degrades without failing; other queues
    submit."""
    health = api.get("/healthz")
    body = health.json()
    assert health.status_code == 200, body  # the database and two clusters answer
    assert body["status"] == "degraded"
    assert body["clusters"]["gwdead"]["ok"] is False and body["clusters"]["gwlocal"]["ok"] is True
    refused = api.post("/runs", json=spec("dead", "true"))
    assert refused.status_code == 503, refused.text
    detail = refused.json()["detail"]
    assert "cluster gwdead is not answering" in detail
    assert "queues on it: dead;" in detail
    open_queues = detail.split("other queues are open: ")[1].split(";")[0].split(", ")
    assert sorted(open_queues) == ["gpu2", "one", "two"]
    metrics = multi.metrics.metrics.render().decode()
    assert 'gateway_cluster_up{cluster="gwdead"} 0.0' in metrics
    assert 'gateway_cluster_up{cluster="gwlocal"} 1.0' in metrics
    ok = api.post("/runs", json=spec("one", "true"))
    assert ok.status_code == 201, ok.text


def test_unreachable_controller_marks_only_its_runs_stale(multi, principal_mc, tmp_path):
    """A run queued on gwlocal2, then gwlocal2's entry pointed at a controller that does not answer
    (the site file applied again): its run goes stale, never failed, while a gwlocal run ends; pointed
    back, the run is followed to its end."""
    from gateway.core.spec.run_spec import build_spec

    long = multi.runs.submit(build_spec(spec("two", "sleep 20")), principal=principal_mc)
    site = multi.site.export(OPERATOR)
    real = site.model_dump(mode="json")
    dead = dead_copy(tmp_path)
    clusters = [c if c["name"] != "gwlocal2" else {**c, "slurm_conf": str(dead)} for c in real["clusters"]]
    broken = {**real, "clusters": clusters}
    multi.site.apply(OPERATOR, parse_site(json.dumps(broken)), sync_slurm=False)
    try:
        short = multi.runs.submit(build_spec(spec("one", "sleep 1")), principal=principal_mc)
        report = multi.refresher.refresh()
        assert "gwlocal2" in report.down
        assert multi.clusters.down("gwlocal2") is not None
        stale = multi.runs.store.get_run(long.id)
        assert stale.latest.stale and stale.state not in TERMINAL
        with pytest.raises(SlurmUnavailable, match="cluster gwlocal2 is not answering"):
            multi.runs.submit(build_spec(spec("two", "true")), principal=principal_mc)
        assert refresh_until(multi, [short.id])[short.id].state is RunState.SUCCEEDED
        assert multi.runs.store.get_run(long.id).state not in TERMINAL  # 0 false failures
    finally:
        multi.site.apply(OPERATOR, parse_site(json.dumps(real)), sync_slurm=False)
    ended = refresh_until(multi, [long.id])[long.id]
    assert ended.state is RunState.SUCCEEDED and not ended.latest.stale
    assert multi.clusters.down("gwlocal2") is None


SLURMCTLD2 = "slurmctld -f /etc/slurm-gwlocal2/slurm.conf"


# On the first database only: what it checks is Slurm's side (a controller that stops answering for a
# minute, then comes back); the database only keeps the states and stale flags that
# test_unreachable_controller_marks_only_its_runs_stale checks on both. Each database was 90 s more
# of the exclusive part, where nothing else runs.
@pytest.mark.exclusive
@pytest.mark.parametrize("backend", BACKENDS[:1], indirect=True)
def test_stopped_controller(multi, principal_mc):
    """gwlocal2's real slurmctld stopped for a minute (only gwlocal2's: gwlocal is never touched): its
    running run stays unfailed and is followed to its end once the controller is back; a gwlocal run
    submitted meanwhile succeeds."""
    from gateway.core.spec.run_spec import build_spec

    daemon = Path(__file__).resolve().parents[2] / "ansible" / "files" / "slurm-daemon"
    if not daemon.exists():
        pytest.skip("ansible/files/slurm-daemon (the playbook's daemon helper) is not in this tree")
    # long enough to outlast the minute and the stop itself (a few seconds), no longer
    long = multi.runs.submit(build_spec(spec("two", "sleep 75")), principal=principal_mc)
    refresh_until_running(multi, long.id)
    pid = "/run/slurm-gwlocal2/slurmctld.pid"
    subprocess.run(["bash", str(daemon), "stop", SLURMCTLD2, pid], check=True, env=C2_ENV)
    try:
        other = multi.runs.submit(build_spec(spec("one", "sleep 2")), principal=principal_mc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            multi.refresher.refresh()
            assert multi.runs.store.get_run(long.id).state not in TERMINAL
            time.sleep(2)
        assert multi.runs.store.get_run(other.id).state is RunState.SUCCEEDED
        assert multi.clusters.down("gwlocal2") is not None
    finally:
        subprocess.run(
            ["bash", str(daemon), "start", SLURMCTLD2, pid, "/var/log/slurm-gwlocal2/slurmctld.log", "--",
             "/usr/sbin/slurmctld", "-f", str(C2_CONF)],
            check=True, env=C2_ENV,
        )  # fmt: skip
    ended = refresh_until(multi, [long.id], timeout_s=180)[long.id]
    assert ended.state is RunState.SUCCEEDED, ended.latest


def test_web_pages_name_the_clusters(multi, api):
    """The queue page shows each cluster's partitions by name (a dead one by its error); the project page
    has a Cluster column; a run's row names its job's cluster."""
    from tests.service.web_client import web_client

    token = multi.auth.issue_token(OPERATOR, "tester", name="pytest-web")[0]
    with web_client(multi, token) as web:
        queue = web.get("/ui/queue").text
        assert "Partition cpu on gwlocal2" in queue and "Partition cpu on gwlocal" in queue
        assert "Cluster gwdead" in queue and "not answering" in queue
        project = web.get("/ui/projects/mc").text
        assert "<th>Cluster</th>" in project and "<td>gwlocal2</td>" in project
        runs = web.get("/ui/runs").text
        assert "on gwlocal2" in runs
