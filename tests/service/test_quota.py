"""Acceptance scenario 2, waiting for resources: caps the gateway checks and Slurm enforces,
and a waiting run that says why, in words and numbers."""

from __future__ import annotations

import subprocess

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.slurm.states import RunState
from tests.conftest import wait_for
from tests.service.conftest import refresh_until, unique_tag

pytestmark = [pytest.mark.slurm, pytest.mark.exclusive]


@pytest.fixture(scope="module")
def app(services):
    with TestClient(create_app(services=services)) as client:
        yield client


def as_user(tokens, user):
    return {"Authorization": f"Bearer {tokens[user]}"}


def gpu_spec(gpus: int, command: str, project: str = "capped") -> dict:
    return {
        "name": f"gpu{gpus}",
        "project": project,
        "queue": "gpu",
        "command": command,
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "resources": {"gpus_per_node": gpus, "gpu_type": "fake", "mem_gb": 0.1, "walltime_min": 5},
    }


def waiting_for(app, headers, run_id, code):
    """Poll GET /runs/{id} until its explanation gives ``code``; returns the run."""

    def explained():
        run = app.get(f"/runs/{run_id}", headers=headers).json()
        return run if run.get("waiting") and run["waiting"]["code"] == code else None

    return wait_for(explained, timeout_s=60, what=f"run {run_id} to wait with reason {code}")


def test_a_run_over_the_cap_is_refused_before_submission(app, tokens):
    response = app.post("/runs", json=gpu_spec(4, "true"), headers=as_user(tokens, "tester"))
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "quota_exceeded"
    assert "4 GPUs at once" in body["detail"] and "project capped is 2" in body["detail"]


def test_second_run_waits_for_the_project_cap_and_starts_when_the_first_ends(app, services, tokens):
    headers = as_user(tokens, "tester")
    first = app.post("/runs", json=gpu_spec(2, "sleep 120"), headers=headers).json()
    refresh_until(services, first["id"], states={RunState.RUNNING})
    second = app.post("/runs", json=gpu_spec(2, "echo second ran"), headers=headers).json()
    services.refresher.refresh()
    run = waiting_for(app, headers, second["id"], "AssocGrpGRES")
    waiting = run["waiting"]
    assert waiting["category"] == "quota"
    assert "2 of 2" in waiting["summary"], waiting
    assert first["job_id"] in " ".join([waiting["summary"], *waiting["details"]]), waiting
    assert waiting["blocking"]["resource"] == "GPUs at once" and waiting["blocking"]["cap"] == 2
    assert waiting["actions"]

    usage = app.get("/projects/capped/usage", headers=headers).json()
    assert usage["gpus"] == {"used": 2, "cap": 2} and first["job_id"] in usage["running_gpu_jobs"]

    # A job submitted around the gateway, with plain sbatch under the project's account, is held too.
    account = services.access.project("capped").slurm_account
    raw = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "-A",
            account,
            "-p",
            "gpu",
            "--gres=gpu:fake:2",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 1",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        reason = wait_for(
            lambda: (
                subprocess.run(
                    ["squeue", "-h", "-j", raw, "-o", "%r"], capture_output=True, text=True, check=True
                ).stdout.strip()
                == "AssocGrpGRES"
            ),
            timeout_s=30,
            what="the raw sbatch job to wait for AssocGrpGRES",
        )
        assert reason
    finally:
        subprocess.run(["scancel", raw], check=False)

    app.post(f"/runs/{first['id']}/cancel", headers=headers)
    done = refresh_until(services, second["id"])
    assert done.state is RunState.SUCCEEDED
    waits = dict((w[0], w[1]) for w in _waits(app, headers, second["id"]))
    assert "AssocGrpGRES" in waits, waits


def _waits(app, headers, run_id):
    run = app.get(f"/runs/{run_id}", headers=headers).json()
    return [(w["reason"], w["seconds"]) for w in run["attempts"][-1]["waits"]]


def test_a_run_behind_a_busy_partition_says_so_with_node_states(app, services, tokens):
    headers = as_user(tokens, "tester")
    fillers = [
        app.post("/runs", json=gpu_spec(4, "sleep 120", "test"), headers=headers).json() for _ in range(2)
    ]
    waiting = {"id": fillers[0]["id"]}
    try:
        for filler in fillers:
            refresh_until(services, filler["id"], states={RunState.RUNNING})
        waiting = app.post("/runs", json=gpu_spec(1, "true", "test"), headers=headers).json()
        run = wait_for(
            lambda: (
                (r := app.get(f"/runs/{waiting['id']}", headers=headers).json()).get("waiting")
                and r["waiting"]["code"] in ("Resources", "Priority")
                and r
            ),
            timeout_s=60,
            what="a Resources or Priority wait",
        )
        text = " ".join([run["waiting"]["summary"], *run["waiting"]["details"]])
        assert run["waiting"]["category"] in ("resources", "priority")
        assert "g1" in text and "g2" in text, text  # the node states are named
        view = app.get("/queue", headers=as_user(tokens, "admin")).json()
        gpu = next(p for p in view["partitions"] if p["name"] == "gpu")
        assert all(n["gpus_free"] == 0 for n in gpu["nodes"])
        running_runs = {j["run_id"] for j in gpu["running"]}
        assert {f["id"] for f in fillers} <= running_runs
        assert waiting["id"] in {j["run_id"] for j in gpu["pending"]}
        assert any(p["project"] == "capped" for p in view["projects"])
    finally:
        for run_id in [f["id"] for f in fillers] + [waiting["id"]]:
            app.post(f"/runs/{run_id}/cancel", headers=headers)
