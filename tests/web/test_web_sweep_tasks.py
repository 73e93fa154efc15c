"""A sweep's tasks as run-like records, end to end on the real cluster and both database backends:
one Slurm array of three points, each task writing its metrics series and an output into its own
directory (GW_TASK_DIR); then ``GET /runs/{id}/tasks[/{i}]``, ``gw tasks``, ``gw.tasks()`` and the
sweep's compare page in chromium, all served by the API app with the pages mounted (uvicorn in a
thread) over the service fixtures."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from gateway.api import create_app
from gateway.client import Gateway
from gateway.client.errors import ApiError
from gateway.core.lineage.values import Artifact
from gateway.core.slurm.states import RunState
from gateway.web import mount_web
from tests.service import conftest as service_fixtures
from tests.service.conftest import PROJECT, refresh_until, unique_tag
from tests.service.gw_serve import GW, serve_in_thread
from tests.web.conftest import shot

pytestmark = pytest.mark.slurm

backend, database_url, settings, kept = (service_fixtures.backend, service_fixtures.database_url,
                                         service_fixtures.settings, service_fixtures.kept)  # fmt: skip
services, principal, tokens = service_fixtures.services, service_fixtures.principal, service_fixtures.tokens

# loss = 1 / (step * lr * 100) at steps 1..3: the final loss orders the tasks lr 0.1, 0.01, 0.001
TRAIN = (
    'for s in 1 2 3; do echo "{\\"step\\": $s, \\"loss\\": $(awk -v l=$GW_PARAM_LR -v s=$s '
    '\'BEGIN{print 1/(s*l*100)}\')}" >> "$GW_TASK_DIR/metrics.jsonl"; done; '
    'echo "model $GW_PARAM_LR" > "$GW_TASK_DIR/model.txt"; echo "task $SLURM_ARRAY_TASK_ID lr $GW_PARAM_LR"'
)
LRS = [0.001, 0.1, 0.01]  # task 0, 1, 2


@pytest.fixture(scope="module")
def pages_url(services) -> Iterator[str]:
    with serve_in_thread(mount_web(create_app(services=services))) as url:
        yield url


@pytest.fixture(scope="module")
def sweep(services, pages_url, tokens) -> dict:
    """One ended, harvested sweep of three points, and a plain run beside it."""
    api = httpx.Client(base_url=pages_url, headers={"Authorization": f"Bearer {tokens['tester']}"})
    base = {
        "project": PROJECT,
        "tags": [unique_tag()],
        "queue": "cpu",
        "workdir": "/tmp",
        "resources": {"mem_gb": 0.25, "walltime_min": 5},
    }
    body = {
        **base,
        "name": "lr-sweep",
        "command": TRAIN,
        "params": {"epochs": 3},
        "metrics": ["metrics.jsonl"],
        "outputs": ["model.txt"],
        "sweep": {"grid": {"lr": LRS}},
    }
    created = api.post("/runs", json=body)
    assert created.status_code == 201, created.text
    plain = api.post("/runs", json={**base, "name": "plain", "command": "true"}).json()
    run = refresh_until(services, created.json()["id"])
    refresh_until(services, plain["id"])
    assert run.state is RunState.SUCCEEDED, run.latest
    services.harvester.harvest_due()
    return {"id": run.id, "job_id": run.latest.job_id, "plain": plain["id"], "api": api}


def test_the_api_shows_each_task_with_its_point_state_metrics_artifacts_and_logs(sweep):
    api, run_id = sweep["api"], sweep["id"]
    listed = api.get(f"/runs/{run_id}/tasks")
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert body["attempt"] == 1 and body["array_job_id"] == sweep["job_id"]
    assert body["metric_names"] == ["loss"]
    tasks = body["tasks"]
    assert [t["index"] for t in tasks] == [0, 1, 2]
    assert [t["point"] for t in tasks] == [{"lr": lr} for lr in LRS]
    assert all(t["params"] == {"epochs": 3, "lr": lr} for t, lr in zip(tasks, LRS, strict=True))
    for t, lr in zip(tasks, LRS, strict=True):
        assert t["state"] == "succeeded" and t["exit_code"] == 0 and t["node_list"] in ("c1", "c2"), t
        assert t["elapsed_s"] is not None and t["job_id"]
        assert t["task_dir"].endswith(f"/tasks/{t['index']}")
        assert t["metrics"]["loss"] == pytest.approx(1 / (3 * lr * 100), rel=1e-4)
        assert t["series"] is None  # the listing leaves the series out; one task has them
        (artifact,) = t["artifacts"]
        assert artifact["path"] == f"tasks/{t['index']}/model.txt" and len(artifact["sha256"]) == 64
        log = api.get(t["logs"]).json()
        assert log["text"].strip() == f"task {t['index']} lr {lr}" and log["task"] == str(t["index"])
    assert len({t["job_id"] for t in tasks}) == 3  # each task's own job id (JobIDRaw)
    one = api.get(f"/runs/{run_id}/tasks/1").json()
    assert one["point"] == {"lr": 0.1} and [p[0] for p in one["series"]["loss"]] == [1, 2, 3]
    assert one["series"]["loss"][0][1] == pytest.approx(0.1)
    # what is not there is said, with what is
    missing = api.get(f"/runs/{run_id}/tasks/7")
    assert missing.status_code == 404 and "has no array task 7; its tasks are 0-2" in missing.json()["detail"]
    plain = api.get(f"/runs/{sweep['plain']}/tasks")
    assert plain.status_code == 404 and "is not a sweep" in plain.json()["detail"]
    assert api.get(f"/runs/{run_id}/tasks", params={"attempt": 5}).status_code == 404
    assert api.get(f"/runs/{run_id}/tasks/x").status_code == 422


def test_the_python_client_gives_tasks_as_values_best_first(sweep, pages_url, tokens):
    with Gateway(pages_url, tokens["tester"]) as gw:
        tasks = gw.tasks(sweep["id"])
        assert [t.index for t in tasks] == [0, 1, 2] and all(t.state == "succeeded" for t in tasks)
        best = gw.tasks(sweep["id"], best="loss")
        assert [t.point["lr"] for t in best] == [0.1, 0.01, 0.001]
        assert [t.point["lr"] for t in gw.tasks(sweep["id"], best="loss", order="max")] == [0.001, 0.01, 0.1]
        one = gw.task(sweep["id"], 2)
        assert one.params == {"epochs": 3, "lr": 0.01} and len(one.series["loss"]) == 3
        assert gw.logs(sweep["id"], task=2).strip() == "task 2 lr 0.01"
        with pytest.raises(ApiError) as refused:
            gw.tasks(sweep["plain"])
        assert refused.value.status == 404
        with pytest.raises(ValueError, match="give 'min'"):
            gw.tasks(sweep["id"], best="loss", order="lowest")


def test_the_python_client_gives_a_runs_outputs_as_values(sweep, pages_url, tokens):
    """Gateway.outputs: the API's /runs/{id}/outputs as RunOutputs, its files domain Artifacts."""
    answer = sweep["api"].get(f"/runs/{sweep['id']}/outputs").json()
    with Gateway(pages_url, tokens["tester"]) as gw:
        outputs = gw.outputs(sweep["id"])
        assert outputs.run_id == sweep["id"] and outputs.harvested
        assert all(isinstance(a, Artifact) for a in outputs.artifacts)
        assert sorted(a.path for a in outputs.artifacts) == [f"tasks/{i}/model.txt" for i in range(3)]
        assert [(a.path, a.sha256, a.size_bytes) for a in outputs.artifacts] == [
            (a["path"], a["sha256"], a["size"]) for a in answer["artifacts"]
        ]
        assert outputs.metrics == answer["metrics"]
        assert outputs.series == {k: [tuple(p) for p in v] for k, v in answer["series"].items()}
        with pytest.raises(ApiError) as missing:
            gw.outputs("r-0000000000000000")
        assert missing.value.status == 404


def gw(pages_url, tokens, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GW_URL": pages_url, "GW_TOKEN": tokens["tester"], "GW_CONFIG": "/nonexistent/gw"}
    return subprocess.run([*GW, *args], env={**env, "COLUMNS": "200"}, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip


def test_gw_tasks_lists_the_tasks_best_first(sweep, pages_url, tokens):
    shown = gw(pages_url, tokens, "tasks", sweep["id"], "--best", "loss")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"run {sweep['id']} attempt 1")
    assert "3 tasks: 3 succeeded; best first by loss" in lines[0]
    assert lines[1].split() == ["task", "state", "exit", "elapsed_s", "node", "point", "loss"]
    rows = [line.split() for line in lines[2:]]
    assert [(r[0], r[1], r[2], r[5]) for r in rows] == [
        ("1", "succeeded", "0", "lr=0.1"),
        ("2", "succeeded", "0", "lr=0.01"),
        ("0", "succeeded", "0", "lr=0.001"),
    ]
    assert float(rows[0][6]) == pytest.approx(1 / 30, rel=1e-4)
    tsv = gw(pages_url, tokens, "tasks", sweep["id"], "--format", "tsv").stdout.splitlines()
    assert tsv[0].split("\t") == ["task", "state", "exit", "elapsed_s", "node", "point", "loss"]
    assert [r.split("\t")[0] for r in tsv[1:]] == ["0", "1", "2"]
    unknown = gw(pages_url, tokens, "tasks", sweep["id"], "--best", "accuracy")
    assert unknown.returncode == 2 and "has a metric 'accuracy'; its metrics: loss" in unknown.stderr
    shown = gw(pages_url, tokens, "show", sweep["id"])
    assert f"each task's sweep point, metrics and artifacts: gw tasks {sweep['id']}" in shown.stdout
    plain = gw(pages_url, tokens, "tasks", sweep["plain"])
    assert plain.returncode == 4 and "is not a sweep" in " ".join(plain.stderr.split())


@pytest.fixture
def page(browser, pages_url, tokens) -> Iterator:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{pages_url}/ui/login")
    page.fill("#token", tokens["tester"])
    page.click("#sign-in")
    page.wait_for_selector("#signed-in-as")
    yield page
    context.close()


def _rows(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#sweep-tasks tbody tr[data-task]",
        "rows => rows.map(r => Array.from(r.querySelectorAll('td')).map(c => c.innerText.trim()))",
    )


def test_the_compare_page_charts_every_task_and_ranks_them(sweep, page, pages_url, backend):
    page.goto(f"{pages_url}/ui/runs/{sweep['id']}")
    page.click("#sweep-tasks-link")
    page.wait_for_selector("#sweep-tasks")
    assert page.url.endswith(f"/ui/runs/{sweep['id']}/tasks")
    alt = page.get_attribute("#tasks-chart img", "alt")
    assert alt == "loss of 3 tasks"
    rows = _rows(page)
    # rank, task, lr, loss, state, exit ...: lowest loss first
    assert [(r[0], r[1], r[2], r[4], r[5]) for r in rows] == [
        ("1", "1", "0.1", "succeeded", "0"),
        ("2", "2", "0.01", "succeeded", "0"),
        ("3", "0", "0.001", "succeeded", "0"),
    ]
    assert float(rows[0][3]) == pytest.approx(1 / 30, rel=1e-4) and rows[0][8] == "tasks/1/model.txt"
    shot(page, f"sweep_tasks_{backend}")
    page.select_option("#order", "max")
    page.click("#tasks-go")
    page.wait_for_selector("#sweep-tasks")
    assert [r[1] for r in _rows(page)] == ["0", "2", "1"]
    # a task's log from its row
    page.goto(f"{pages_url}/ui/runs/{sweep['id']}/tasks")
    with page.expect_navigation():
        page.click("#sweep-tasks tr[data-task='2'] a:text('stdout')")
    assert "task 2 lr 0.01" in page.content()
    # a metric no task has is said; the table stays
    page.goto(f"{pages_url}/ui/runs/{sweep['id']}/tasks?metric=accuracy")
    assert "no task has a metric 'accuracy'; they have: loss" in page.inner_text("#tasks-error")
    assert [r[1] for r in _rows(page)] == ["1", "2", "0"]
    # a plain run has no tasks page: said, not a 500
    answer = page.goto(f"{pages_url}/ui/runs/{sweep['plain']}/tasks")
    assert answer is not None and answer.status == 404 and "is not a sweep" in page.content()
