"""A secret passed as a param is refused at the API, without its value echoed (issue 26, item 1);
both database backends (the refusal comes before anything is written)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from tests.service.conftest import PROJECT, unique_tag


@pytest.fixture(scope="module")
def api(services, tester_token):
    with TestClient(create_app(services=services)) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        yield client


def spec(**changes):
    base = {"name": "p", "project": PROJECT, "queue": "cpu", "command": "true", "tags": [unique_tag()]}
    return {**base, **changes}


def test_post_runs_refuses_a_secret_looking_param_and_does_not_echo_it(api):
    response = api.post("/runs", json=spec(params={"password": "hunter22-secret", "lr": 0.1}))
    assert response.status_code == 422, response.text
    assert "hunter22-secret" not in response.text
    (issue,) = response.json()["detail"]
    assert issue["loc"] == ["body", "params"] and issue["input"] is None
    assert (
        "params.password look(s) like a secret by name" in issue["msg"]
        and "run-spec.md#secrets" in issue["msg"]
    )


def test_a_rerun_cannot_add_one_either(api, services):
    made = api.post("/runs", json=spec(params={"lr": 0.1}, hold=True))
    assert made.status_code == 201, made.text
    run_id = made.json()["id"]
    try:
        response = api.post(f"/runs/{run_id}/rerun", json={"set": ["params.api_token=t0k3n-value"]})
        assert response.status_code == 422, response.text
        assert "t0k3n-value" not in response.text and "params.api_token" in response.text
    finally:
        api.post(f"/runs/{run_id}/cancel")
