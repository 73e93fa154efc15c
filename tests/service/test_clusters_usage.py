"""A project's usage per cluster (docs/clusters.md) through every interface, on the two real local
clusters and the dead gwdead of ``tests/service/clusters_setup.py`` (a database of this module's own).

Each cluster enforces the caps on its own associations, so one job of project mc on gwlocal2 is counted
there and not on gwlocal: the usage answer names its cluster, ``gw quota`` gives one block per cluster
mc has queues on (gwdead's by its error), the project page one section each, and the submit form the
usage of the chosen queue's cluster.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from gateway.api.app import create_app
from gateway.client import Gateway
from tests.service.clusters_setup import OPERATOR, spec
from tests.service.gw_serve import GW, serve_in_thread
from tests.service.web_client import web_client

pytestmark = pytest.mark.slurm
CLUSTERS = ["gwlocal", "gwlocal2", "gwdead"]  # mc's queues' clusters, in the site file's order
SHOWN = ["gwlocal", "gwdead", "gwlocal2"]  # gw quota's blocks: the first cluster, then the others by name


@pytest.fixture(scope="module")
def on_c2(api) -> Iterator[str]:
    """A run of mc on gwlocal2 (queue two) that Slurm has in its queue; cancelled at the end."""
    run = api.post("/runs", json=spec("two", "sleep 120")).json()
    try:
        deadline = time.monotonic() + 60
        while (
            api.get("/projects/mc/usage", params={"cluster": "gwlocal2"}).json()["jobs_in_queue"]["used"] < 1
        ):
            assert time.monotonic() < deadline, "the run on gwlocal2 never reached its queue"
            time.sleep(1)
        yield run["id"]
    finally:
        api.post(f"/runs/{run['id']}/cancel")


@pytest.fixture(scope="module")
def served(multi) -> Iterator[tuple[str, str]]:
    """The API of ``multi`` served on a loopback port: its URL, and a token of tester."""
    token = multi.auth.issue_token(OPERATOR, "tester", name="pytest-cli")[0]
    with serve_in_thread(create_app(services=multi)) as url:
        yield url, token


@pytest.fixture(scope="module")
def gw(served, tmp_path_factory) -> Callable[..., subprocess.CompletedProcess]:
    """``gw`` as a process, against ``served``, as tester."""
    config = str(tmp_path_factory.mktemp("gwconfig") / "none.toml")
    url, token = served

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "GW_URL": url, "GW_TOKEN": token, "GW_CONFIG": config, "COLUMNS": "200"}
        return subprocess.run([*GW, *args], env=env, capture_output=True, text=True, timeout=180)

    return run


def test_the_usage_answer_names_its_cluster(api, on_c2):
    """GET /projects/mc/usage names the cluster it counted on: the first one by default, the asked one
    otherwise; the job on gwlocal2 is in gwlocal2's answer only."""
    first = api.get("/projects/mc/usage").json()
    assert first["cluster"] == "gwlocal" and first["jobs_in_queue"]["used"] == 0, first
    there = api.get("/projects/mc/usage", params={"cluster": "gwlocal2"}).json()
    assert there["cluster"] == "gwlocal2" and there["jobs_in_queue"]["used"] == 1, there


def test_usage_by_cluster_asks_each_cluster_of_the_projects_queues(multi, principal_mc, on_c2):
    """The service: mc's clusters in the site file's order, each one's usage, gwdead by its error while
    the others are still counted."""
    assert multi.usage.project_clusters(principal_mc, "mc") == CLUSTERS
    found = {u.cluster: u for u in multi.usage.usage_by_cluster(principal_mc, "mc")}
    assert list(found) == CLUSTERS
    assert found["gwlocal"].usage is not None and found["gwlocal"].usage.jobs_in_queue.used == 0
    assert found["gwlocal2"].usage is not None and found["gwlocal2"].usage.jobs_in_queue.used == 1
    assert found["gwlocal2"].usage.cluster == "gwlocal2"
    assert found["gwdead"].usage is None and found["gwdead"].error


def test_gw_quota_gives_one_block_per_cluster(gw, on_c2):
    """``gw quota mc``: a block per cluster mc has queues on (gwdead not answering), each with its own
    numbers (the job on gwlocal2 counted there alone); ``--cluster`` one block; ``--json`` names each
    answer's cluster; an unknown cluster is refused naming the clusters."""
    done = gw("quota", "mc")
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.split("project mc on cluster ")[1:]
    assert [b.split()[0].rstrip(":") for b in blocks] == SHOWN, done.stdout
    assert "not answering" in blocks[1]
    assert (_jobs_in_queue(blocks[0]), _jobs_in_queue(blocks[2])) == ("0 (no cap)", "1 (no cap)"), blocks
    one = gw("quota", "mc", "--cluster", "gwlocal2", "--json")
    assert one.returncode == 0, one.stderr
    (report,) = json.loads(one.stdout)
    assert report["cluster"] == "gwlocal2" and report["jobs_in_queue"]["used"] == 1, report
    every = json.loads(gw("quota", "mc", "--json").stdout)
    assert [r["cluster"] for r in every] == SHOWN
    assert [every[0]["jobs_in_queue"]["used"], every[2]["jobs_in_queue"]["used"]] == [0, 1]
    assert "did not answer" in every[1]["error"]
    unknown = gw("quota", "mc", "--cluster", "nowhere")
    assert unknown.returncode != 0 and "gwlocal, gwlocal2, gwdead" in unknown.stderr, unknown.stderr


def _jobs_in_queue(block: str) -> str:
    """The JOBS IN QUEUE cell of a ``gw quota`` block's (project) row."""
    row = next(line for line in block.splitlines() if "(project)" in line)
    return row.split("│")[-1].strip()


def test_the_project_page_shows_usage_per_cluster(multi, on_c2):
    """/ui/projects/mc: a section per cluster, each with its own numbers; gwdead's says it is unknown."""
    token = multi.auth.issue_token(OPERATOR, "tester", name="pytest-web")[0]
    with web_client(multi, token) as web:
        page = web.get("/ui/projects/mc").text
    section = r'<section class="usage-cluster" id="usage-([^"]+)">(.*?)</section>'
    sections = dict(re.findall(section, page, re.S))
    assert list(sections) == CLUSTERS, page
    assert "Jobs in queue: 0 jobs" in sections["gwlocal"]
    assert "Jobs in queue: 1 jobs" in sections["gwlocal2"]
    assert "usage unknown now" in sections["gwdead"] and "usebar" not in sections["gwdead"]


def test_the_submit_form_shows_the_chosen_queues_clusters_usage(multi, principal_mc, on_c2):
    """The submit form's "left under the caps" is the chosen queue's cluster's; a queue on the dead
    cluster says its usage is unknown, and the form is still there."""
    assert multi.submit_form.quota_left(principal_mc, "mc", cluster="gwlocal2").cluster == "gwlocal2"
    token = multi.auth.issue_token(OPERATOR, "tester", name="pytest-web")[0]
    with web_client(multi, token) as web:
        for queue, cluster in (("one", "gwlocal"), ("two", "gwlocal2"), ("gpu2", "gwlocal2")):
            form = web.get("/ui/submit", params={"project": "mc", "queue": queue}).text
            assert f'<span id="quota-cluster">{cluster}</span>' in form, (queue, form)
        dead = web.get("/ui/submit", params={"project": "mc", "queue": "dead"})
    assert dead.status_code == 200 and 'id="submit-form"' in dead.text
    assert "quota left unknown now" in dead.text and 'id="quota-left"' not in dead.text


def _queue_usage(view: dict) -> dict[str, int]:
    """{cluster: jobs in queue} of project mc in a queue view."""
    return {u["cluster"]: u["jobs_in_queue"]["used"] for u in view["projects"] if u["project"] == "mc"}


def test_the_queue_view_gives_each_clusters_usage(api, gw, multi, on_c2):
    """GET /queue's usage: mc on each cluster it has queues on, each named, the job on gwlocal2 counted
    there alone (gwdead, not answering, has none: its partitions entry says why); ?cluster= (gw queue
    --cluster, /ui/queue?cluster=) that cluster's alone."""
    every = api.get("/queue").json()
    assert _queue_usage(every) == {"gwlocal": 0, "gwlocal2": 1}, every["projects"]
    assert any(p["cluster"] == "gwdead" and p["error"] for p in every["partitions"])
    one = api.get("/queue", params={"cluster": "gwlocal2"}).json()
    assert _queue_usage(one) == {"gwlocal2": 1} and {p["cluster"] for p in one["projects"]} == {"gwlocal2"}
    done = gw("queue", "--cluster", "gwlocal2")
    assert done.returncode == 0, done.stderr
    usage = done.stdout.split("PROJECT")[-1]
    assert "CLUSTER" in usage and re.search(r"mc\s+│\s+gwlocal2\s+│", usage), done.stdout
    assert "gwlocal " not in usage.replace("gwlocal2", ""), done.stdout
    token = multi.auth.issue_token(OPERATOR, "tester", name="pytest-web")[0]
    with web_client(multi, token) as web:
        page = web.get("/ui/queue", params={"cluster": "gwlocal2"}).text
    rows = page.split("<h2>Per project</h2>")[1]
    assert "<th>Cluster</th>" in rows and "<td>gwlocal2</td>" in rows and "<td>gwlocal</td>" not in rows


def test_gw_runs_and_the_python_client_filter_by_cluster(gw, served, on_c2):
    """``gw runs --cluster`` and ``Gateway.runs(cluster=...)``: the run on gwlocal2 is listed for
    gwlocal2 (its CLUSTER column naming it), not for gwlocal; an unknown cluster is refused naming the
    clusters."""
    there = gw("runs", "--project", "mc", "--cluster", "gwlocal2", "--format", "tsv")
    assert there.returncode == 0, there.stderr
    header, *rows = [line.split("\t") for line in there.stdout.splitlines()]
    row = next(r for r in rows if r[header.index("RUN")] == on_c2)
    assert row[header.index("CLUSTER")] == "gwlocal2", there.stdout
    here = gw("runs", "--project", "mc", "--cluster", "gwlocal", "--format", "tsv")
    assert here.returncode == 0 and on_c2 not in here.stdout, here
    unknown = gw("runs", "--cluster", "nowhere")
    assert unknown.returncode != 0 and "gwlocal, gwlocal2, gwdead" in unknown.stderr, unknown.stderr
    with Gateway(*served) as client:
        listed = client.runs(project="mc", cluster="gwlocal2")
        assert on_c2 in [r.id for r in listed] and {r.cluster for r in listed} == {"gwlocal2"}
        assert on_c2 not in [r.id for r in client.runs(project="mc", cluster="gwlocal")]


def slurm_calls(services) -> dict[tuple[str, str], float]:
    """Slurm commands the metered runner timed so far, by (command, cluster)."""
    out: dict[tuple[str, str], float] = {}
    for metric in services.metrics.metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == "gateway_slurm_command_duration_seconds_count":
                out[(sample.labels["command"], sample.labels["cluster"])] = sample.value
    return out


def test_project_page_loads_make_a_bounded_number_of_slurm_calls(multi, on_c2):
    """/ui/projects/mc loaded 30 times: its usage comes from the cached cluster facts, so each answering
    cluster is asked (one sacct, one squeue) at most once per GATEWAY_CLUSTER_FACTS_TTL_S window (plus
    once for facts cached before that expire meanwhile), whatever the number of loads, and gwdead, which
    a health check found not answering, not at all (its section says so); counted by the metered runner
    every Slurm command passes (GET /metrics' histogram)."""
    loads, ttl_s = 30, multi.settings.cluster_facts_ttl_s
    assert not multi.health.check().clusters["gwdead"].ok and multi.clusters.down("gwdead") is not None
    token = multi.auth.issue_token(OPERATOR, "tester", name="pytest-web")[0]
    with web_client(multi, token) as web:
        before, started = slurm_calls(multi), time.monotonic()
        for _ in range(loads):
            page = web.get("/ui/projects/mc")
            assert page.status_code == 200 and "Jobs in queue: 1 jobs" in page.text
        windows = math.floor((time.monotonic() - started) / ttl_s) + 2
    assert "cluster gwdead did not answer (not answering since" in page.text
    made = {k: v - before.get(k, 0) for k, v in slurm_calls(multi).items() if v > before.get(k, 0)}
    assert {command for command, _ in made} <= {"sacct", "squeue"}, made
    assert {cluster for _, cluster in made} <= {"gwlocal", "gwlocal2"}, made
    assert all(count <= windows for count in made.values()), (made, windows)
    assert sum(made.values()) < loads, made
