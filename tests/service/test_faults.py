"""Acceptance scenario 3, failure midway: classified with evidence, retried per policy or not,
and a fixed rerun linked to the failed run."""

from __future__ import annotations

import subprocess
import time

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.slurm.states import RunState
from tests.service.conftest import OPERATOR, PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def app(services, tester_token):
    with TestClient(create_app(services=services)) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        yield client


def spec(**changes) -> dict:
    base = {
        "name": "fault",
        "project": PROJECT,
        "queue": "cpu",
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
    }
    return {**base, **changes}


def follow(services, run_id, *, states=None, timeout_s=120):
    """Refresh (and process due retries, as gw serve does) until the run reaches ``states``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        services.refresher.refresh()
        services.retries.process_due()
        run = services.runs.store.get_run(run_id)
        if run.state in (states or {RunState.SUCCEEDED}):
            return run
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} is {run.state}: {run.attempts}")


def test_missing_dataset_is_data_access_and_not_retried_then_a_fixed_rerun_links_back(
    app, services, tmp_path
):
    data = tmp_path / "data.txt"
    data.write_text("hello\n")
    data.chmod(0o644)
    tmp_path.chmod(0o755)
    body = app.post(
        "/runs", json=spec(command='cat "$1" || true; echo ran', datasets=["/nonexistent/data.txt"])
    ).json()
    run = refresh_until(services, body["id"])
    attempt = run.latest
    assert run.state is RunState.FAILED and attempt.exit_code == 80
    failure = app.get(f"/runs/{run.id}").json()["attempts"][0]["failure"]
    assert (
        failure["class"] == "data_access"
        and "/nonexistent/data.txt" in failure["summary"] + failure["action"]
    )
    assert failure["retry"]["retry"] is False
    assert failure["evidence"]["exit_code"] == 80
    out = app.get(f"/runs/{run.id}/logs").json()["text"]
    assert "ran" not in out, "the user's command must not start after a failed pre-flight"
    assert len(services.runs.store.get_run(run.id).attempts) == 1

    rerun = app.post(f"/runs/{run.id}/rerun", json={"set": [f"datasets=[{data}]"]})
    assert rerun.status_code == 201, rerun.text
    child = rerun.json()
    assert child["parent_run_id"] == run.id
    assert child["derived_diff"] == [
        {"path": "datasets", "before": ["/nonexistent/data.txt"], "after": [str(data)]}
    ]
    done = refresh_until(services, child["id"])
    assert done.state is RunState.SUCCEEDED
    parent = app.get(f"/runs/{run.id}").json()
    assert parent["children"] == [child["id"]] and parent["attempts"][0]["failure"]["class"] == "data_access"
    audit = services.audit.events(OPERATOR, target=child["id"]).items
    assert audit[0].action == "run.rerun" and audit[0].after["parent_run_id"] == run.id


def test_user_code_failure_is_not_retried(app, services):
    body = app.post("/runs", json=spec(command="echo boom >&2; exit 1")).json()
    run = refresh_until(services, body["id"])
    shown = app.get(f"/runs/{run.id}").json()["attempts"]
    assert len(shown) == 1
    failure = shown[0]["failure"]
    assert failure["class"] == "user_code" and "boom" in failure["evidence"]["log_tail"]
    services.retries.process_due()
    assert len(services.runs.store.get_run(run.id).attempts) == 1


def test_slurm_requeue_is_recorded_as_an_attempt_with_its_own_accounting(app, services):
    body = app.post("/runs", json=spec(command="sleep 6")).json()
    follow(services, body["id"], states={RunState.RUNNING})
    subprocess.run(["scontrol", "requeue", body["job_id"]], check=True)
    run = follow(services, body["id"], timeout_s=180)
    first, second = run.attempts[0], run.attempts[1]
    assert (first.job_id, second.job_id) == (body["job_id"], body["job_id"])
    assert first.superseded and second.origin == "requeue" and second.state is RunState.SUCCEEDED
    assert first.start_time and second.start_time and second.start_time > first.start_time
    assert first.elapsed_s is not None and second.elapsed_s is not None
    assert (
        first.failure and first.failure["retry"]["retry"] is False
    )  # Slurm retried it, the gateway does not


@pytest.mark.exclusive
def test_node_down_mid_run_is_retried_off_that_node(app, services):
    body = app.post("/runs", json=spec(command="sleep 8; hostname", requeue=False)).json()
    run = follow(services, body["id"], states={RunState.RUNNING})
    node = run.latest.node_list
    try:
        subprocess.run(
            ["scontrol", "update", f"nodename={node}", "state=down", "reason=gateway-test"], check=True
        )
        run = follow(services, body["id"], timeout_s=180)
    finally:
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], check=False)
    first, second = run.attempts[0], run.attempts[1]
    assert first.state is RunState.NODE_FAILED and first.failure["class"] == "node_failure"
    assert first.failure["retry"]["retry"] is True and node in first.failure["retry"]["exclude_nodes"]
    assert second.origin == "retry" and second.job_id != first.job_id
    assert second.excluded_nodes == [node] and second.node_list != node
    assert second.state is RunState.SUCCEEDED
    events = [e.action for e in services.audit.events(OPERATOR, target=run.id).items]
    assert events == ["run.submit", "run.retry"]


def test_a_runs_own_retry_policy_overrides_its_queues(app, services):
    body = app.post(
        "/runs",
        json=spec(command="exit 1", retry={"classes": ["user_code"], "max_attempts": 2, "backoff_s": 0}),
    ).json()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        services.refresher.refresh()
        services.retries.process_due()
        run = services.runs.store.get_run(body["id"])
        if len(run.attempts) == 2 and run.latest.failure:
            break
        time.sleep(0.5)
    first, second = run.attempts
    assert first.failure["class"] == "user_code" and first.failure["retry"]["retry"] is True
    assert second.origin == "retry" and second.state is RunState.FAILED
    assert second.failure["retry"]["retry"] is False and "2 of 2" in second.failure["retry"]["why"]
