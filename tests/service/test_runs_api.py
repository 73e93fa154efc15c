"""Runs through the REST API against the real cluster, on both database backends."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.slurm.states import RunState
from gateway.settings import Settings
from tests.service.conftest import PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def api(services, tester_token):
    with TestClient(create_app(services=services)) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        yield client


def spec(**changes):
    base = {
        "name": "api-run",
        "project": PROJECT,
        "tags": [unique_tag()],
        "queue": "cpu",
        "command": "echo out; echo err >&2",
        "workdir": "/tmp",
        "resources": {"mem_gb": 0.25, "walltime_min": 5},
    }
    return {**base, **changes}


def test_run_completes_with_accounting(api, services):
    tag = unique_tag()
    response = api.post("/runs", json=spec(params={"lr": 0.5}, tags=[tag]))
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["state"] == "queued" and body["job_id"] and body["submitter"] == "tester"
    assert body["script"].startswith("#!/bin/bash") and len(body["script_sha256"]) == 64
    refresh_until(services, body["id"])
    run = api.get(f"/runs/{body['id']}").json()
    assert run["state"] == "succeeded"
    (attempt,) = run["attempts"]
    assert attempt["exit_code"] == 0 and attempt["elapsed_s"] is not None
    assert attempt["alloc_tres"]["cpu"] == "1" and attempt["node_list"]
    assert attempt["start_time"] and attempt["end_time"]
    assert [e["to_state"] for e in attempt["events"]][:2] == ["submitting", "queued"]
    assert attempt["events"][-1]["to_state"] == "succeeded"
    out = api.get(f"/runs/{body['id']}/logs").json()
    err = api.get(f"/runs/{body['id']}/logs", params={"stream": "stderr"}).json()
    assert (out["text"], err["text"]) == ("out\n", "err\n")
    follow = api.get(f"/runs/{body['id']}/logs", params={"offset_bytes": 2}).json()
    assert follow["text"] == "t\n" and follow["next_offset_bytes"] == 4
    listed = api.get("/runs", params={"project": body["project"], "tag": tag}).json()
    assert [r["id"] for r in listed["items"]] == [body["id"]]


def test_run_fails_with_its_exit_code(api, services):
    body = api.post("/runs", json=spec(command="exit 7")).json()
    run = refresh_until(services, body["id"])
    assert run.state is RunState.FAILED and run.latest.exit_code == 7


def test_cancel_a_running_run(api, services):
    body = api.post("/runs", json=spec(command="sleep 300")).json()
    refresh_until(services, body["id"], states={RunState.RUNNING})
    response = api.post(f"/runs/{body['id']}/cancel")
    assert response.status_code == 200
    run = refresh_until(services, body["id"])
    assert run.state is RunState.CANCELLED and run.latest.cancelled_by_uid == 0
    assert any(e.reason == "cancel requested by tester" for e in run.latest.events)
    # the gateway's record names who asked, not Slurm's uid 0
    failure = refresh_until_failure(services, body["id"])
    assert failure["class"] == "cancelled" and failure["summary"] == "Cancelled by tester."
    again = api.post(f"/runs/{body['id']}/cancel")
    assert again.status_code == 200 and again.json()["state"] == "cancelled"


def refresh_until_failure(services, run_id: str, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        latest = services.runs.store.get_run(run_id).latest
        if latest.failure is not None:
            return latest.failure
        services.refresher.refresh()
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} was not diagnosed in {timeout_s} s")


def test_array_sweep_run(api, services):
    body = api.post(
        "/runs",
        json=spec(command='cat "$GW_PARAMS_FILE"', sweep={"params": [{"i": 0}, {"i": 1}, {"i": 2}]}),
    ).json()
    run = refresh_until(services, body["id"])
    assert run.state is RunState.SUCCEEDED
    assert sorted(run.latest.tasks) == ["0", "1", "2"]
    assert all(t["state"] == "succeeded" for t in run.latest.tasks.values())
    task2 = api.get(f"/runs/{body['id']}/logs", params={"task": "2"}).json()
    assert task2["text"].strip() == '{"i": 2}' and task2["task"] == "2" and task2["array_tasks"] == "0-2"
    first = api.get(f"/runs/{body['id']}/logs").json()
    assert first["task"] == "0" and first["text"].strip() == '{"i": 0}'
    missing = api.get(f"/runs/{body['id']}/logs", params={"task": "7"})
    assert missing.status_code == 404 and "has no array task 7; its tasks are 0-2" in missing.json()["detail"]


def test_unknown_queue_is_refused_before_slurm(api):
    response = api.post("/runs", json=spec(queue="nosuchqueue"))
    assert response.status_code == 422
    (issue,) = response.json()["detail"]
    assert issue["loc"] == ["body", "queue"] and "its queues: cpu, gpu" in issue["msg"]


def test_slurm_rejection_is_422_and_kept_on_record(api):
    # Slurm refuses a feature no node has (the gateway does not know features): its message comes
    # back, the run stays on record.
    response = api.post("/runs", json=spec(slurm_options={"constraint": "nosuchfeature"}))
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "submit_rejected" and "Invalid feature specification" in body["detail"]
    run = api.get(f"/runs/{body['run_id']}").json()
    assert run["state"] == "never_submitted"


@pytest.mark.parametrize(
    ("queue", "resources", "loc", "message"),
    [
        ("cpu", {"gpus_per_node": 8}, "gpus_per_node", "queue cpu has no GPUs; queue gpu has 4 per node"),
        ("gpu", {"gpus_per_node": 100}, "gpus_per_node", "queue gpu has at most 4 GPUs per node: ask for"),
        ("cpu", {"mem_gb": 64}, "mem_gb", "nodes of queue cpu have at most 4000 MB (3.91 GB) of memory"),
        ("cpu", {"nodes": 3}, "nodes", "queue cpu has 2 nodes: ask for at most 2"),
        ("cpu", {"walltime_min": 2000}, "walltime_min", "partition cpu of queue cpu allows at most 1440"),
    ],
)  # fmt: skip
def test_a_request_no_node_could_hold_is_refused_before_recording(api, queue, resources, loc, message):
    tag = unique_tag()
    body = spec(queue=queue, tags=[tag], resources={"mem_gb": 0.25, "walltime_min": 5, **resources})
    for path in ("/runs", "/runs/check"):
        response = api.post(path, json=body)
        assert response.status_code == 422, response.text
        (issue,) = response.json()["detail"]
        assert issue["loc"] == ["body", "resources", loc] and issue["msg"].startswith(message), issue
    assert api.get("/runs", params={"tag": tag}).json()["items"] == []  # nothing recorded


def test_a_mistyped_field_gets_the_field_it_is_close_to(api):
    body = spec()
    body["comand"] = body.pop("command")
    (issue,) = api.post("/runs", json=body).json()["detail"]
    assert issue["loc"] == ["body", "comand"] and issue["msg"] == "unknown field; did you mean `command`?"


def test_refresh_uses_at_most_two_slurm_calls(counting_services, principal):
    services, runner = counting_services
    from gateway.core.spec.run_spec import build_spec

    run = services.runs.submit(build_spec(spec(command="sleep 1")), principal=principal)
    runner.calls.clear()
    services.refresher.refresh()
    assert len(runner.calls) <= 2 and {c[0] for c in runner.calls} <= {"squeue", "sacct"}
    refresh_until(services, run.id)


def test_unreachable_slurm_flags_stale_never_failed(settings, services, principal):
    from gateway.core.spec.run_spec import build_spec
    from gateway.wiring import build_services

    run = services.runs.submit(build_spec(spec(command="sleep 2")), principal=principal)
    impatient = build_services(
        Settings(**{**settings.model_dump(), "slurm_query_timeout_s": 0.0001}), upgrade=False
    )
    report = impatient.refresher.refresh()
    impatient.close()
    assert report.stale >= 1
    latest = services.runs.get(run.id, principal=principal).latest
    assert latest.stale and latest.state in {RunState.QUEUED, RunState.RUNNING}
    assert refresh_until(services, run.id).state is RunState.SUCCEEDED
    assert not services.runs.get(run.id, principal=principal).latest.stale


def test_healthz(api):
    body = api.get("/healthz").json()
    assert body["status"] == "ok" and body["database"]["ok"] and body["slurm"]["ok"]
    assert body["database"]["latency_ms"] >= 0
    # the one cluster answered just now, and is not down; the database check carries neither
    assert body["slurm"]["last_answered_at"] is not None and body["slurm"]["down_since"] is None
    assert body["database"]["last_answered_at"] is None and "clusters" not in body


def test_not_found_and_conflict(api):
    assert api.get("/runs/r-0000000000000000").status_code == 404
    assert api.post("/runs/r-0000000000000000/cancel").json()["error"] == "not_found"


def test_gateway_environment_does_not_leak_into_jobs(api, services, monkeypatch):
    monkeypatch.setenv("GATEWAY_LEAK_PROBE", "database-password")
    body = api.post("/runs", json=spec(command="env", env={"MINE": "kept"})).json()
    refresh_until(services, body["id"])
    seen = api.get(f"/runs/{body['id']}/logs", params={"tail": 1000}).json()["text"]
    assert "GATEWAY_LEAK_PROBE" not in seen and "database-password" not in seen
    assert "MINE=kept" in seen.splitlines() and "USER=root" in seen.splitlines()
