"""The evaluation API on the eval world (SQLite and PostgreSQL): shapes, errors, the reviewer role, trace."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from tests.service.conftest import PROJECT
from tests.service.eval_world import TASKS, suite_data

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def api(services, tokens):
    with TestClient(create_app(services=services)) as client:

        def call(user: str, method: str, path: str, **kwargs):
            headers = {"Authorization": f"Bearer {tokens[user]}"}
            return client.request(method, path, headers=headers, **kwargs)

        yield call


def test_suite_versions_through_the_api(api, eval_world):
    v1 = eval_world.suites["v1"]
    again = api("mia", "POST", "/eval/suites", json=v1.suite.model_dump(mode="json"))
    assert again.status_code == 200 and again.json()["created"] is False and again.json()["id"] == v1.id
    shown = api("watcher", "GET", f"/eval/suites/{PROJECT}/{v1.name}").json()
    assert [v["version"] for v in shown["versions"]] == [1, 2] and shown["latest_version"] == 2
    latest = api("watcher", "GET", f"/eval/suites/{PROJECT}/{v1.name}/versions/latest").json()
    assert latest["id"] == eval_world.suites["v2"].id
    assert latest["definition"]["prompt_template"] == "Finish the sentence: {{context}}"
    (dataset,) = latest["datasets"]
    assert dataset["ref"] == f"{eval_world.dataset}@latest" and dataset["version"].endswith("@1")
    listed = api("watcher", "GET", "/eval/suites", params={"project": PROJECT}).json()
    assert v1.name in {s["name"] for s in listed}
    assert api("outsider", "GET", "/eval/suites", params={"project": PROJECT}).json() == []


def test_bad_suites_get_field_errors(api, eval_world):
    data = suite_data(eval_world.dataset, "api-bad")
    data["tasks"][0]["metrics"][0]["colour"] = "red"
    response = api("mia", "POST", "/eval/suites", json=data)
    assert response.status_code == 422 and response.json()["error"] == "invalid_request"
    assert any("colour" in str(issue["loc"]) for issue in response.json()["detail"])
    unreadable = suite_data("not-a-dataset", "api-bad")
    response = api("mia", "POST", "/eval/suites", json=unreadable)
    assert response.status_code == 422
    (issue,) = response.json()["detail"]
    assert issue["loc"] == ["body", "datasets", "0"] and "cannot read this dataset" in issue["msg"]


def test_starting_an_eval_is_checked_before_anything_runs(api, eval_world):
    ref = eval_world.suites["v1"].ref
    cases = [
        ({"suite": ref}, 422, "give the artifact's sha256"),
        ({"suite": ref, "run_id": eval_world.training["weak"]}, 422, "has 3 artifacts; name one"),
        ({"suite": "test/no-such-suite@1", "artifact_sha256": "0" * 64}, 404, "no eval suite"),
        ({"suite": ref, "artifact_sha256": "0" * 64}, 404, "no artifact with sha256"),
        ({"suite": "bad ref", "artifact_sha256": "0" * 64}, 422, "is not valid"),
    ]
    for body, status, words in cases:
        response = api("mia", "POST", "/eval/runs", json=body)
        assert response.status_code == status, (body, response.text)
        assert words in response.text, (body, response.text)
    body = {"suite": ref, "artifact_sha256": eval_world.artifacts["weak"]}
    assert api("watcher", "POST", "/eval/runs", json=body).status_code == 403
    assert api("outsider", "POST", "/eval/runs", json=body).status_code == 404


def test_the_reviewer_role_reads_and_reviews_but_does_not_submit(api, eval_world):
    result = eval_world.results["strong"]
    reads = [
        f"/eval/results/{result}",
        f"/eval/runs/{eval_world.evals['strong'].id}",
        f"/eval/suites/{PROJECT}/{eval_world.suites['v1'].name}",
        f"/lineage/eval-results/{result}",
        f"/runs/{eval_world.evals['strong'].run_id}",
    ]
    for path in reads:
        assert api("rita", "GET", path).status_code == 200, path
    body = {"suite": eval_world.suites["v1"].ref, "artifact_sha256": eval_world.artifacts["weak"]}
    assert api("rita", "POST", "/eval/runs", json=body).status_code == 403
    run = {"name": "x", "project": PROJECT, "queue": "cpu", "command": "true"}
    refused = api("rita", "POST", "/runs", json=run)
    assert refused.status_code == 403 and "their role: reviewer" in refused.json()["detail"]
    definition = eval_world.suites["v1"].suite.model_dump(mode="json")
    assert api("rita", "POST", "/eval/suites", json=definition).status_code == 403
    assert api("rita", "POST", f"/eval/results/{result}/gate", json={}).status_code == 403
    review = {
        "target": result,
        "verdict": "needs-work",
        "notes": "<b>check</b> the ones with commas",
        "samples": [{"task": TASKS[0], "id": "3"}],
        "labels": {f"{TASKS[0]}/3": "odd ending"},
    }
    made = api("rita", "POST", "/eval/reviews", json=review)
    assert made.status_code == 201, made.text
    assert made.json()["reviewer"] == "rita" and made.json()["current"]
    listed = api("watcher", "GET", "/eval/reviews", params={"target": result}).json()
    assert made.json()["id"] in [r["id"] for r in listed]


def test_gate_and_compare_through_the_api(api, eval_world):
    weak, strong = eval_world.results["weak"], eval_world.results["strong"]
    gate = api("mia", "POST", f"/eval/results/{weak}/gate", json={"baseline": strong})
    assert gate.status_code == 201 and gate.json()["verdict"] == "fail"
    assert api("watcher", "GET", f"/eval/gates/{gate.json()['id']}").json() == gate.json()
    no_baseline = api("mia", "POST", f"/eval/results/{strong}/gate", json={}).json()
    assert no_baseline["baseline_id"] is None and no_baseline["baseline_source"] == "none"
    assert "no baseline: the regression rules were not evaluated" in no_baseline["decision"]["notes"]
    compared = api("watcher", "GET", f"/eval/compare/{weak}/{strong}").json()
    assert compared["verdict"] == "fail" and {r["verdict"] for r in compared["rows"]} == {"regressed"}
    shown = api("watcher", "GET", f"/eval/results/{weak}").json()
    assert gate.json()["id"] in [g["id"] for g in shown["gates"]]
    assert {t["name"] for t in shown["tasks"]} == set(TASKS)


def test_trace_of_an_eval_result_and_of_an_artifact(api, eval_world, services):
    result = eval_world.results["strong"]
    trace = api("watcher", "GET", f"/lineage/eval-results/{result}").json()
    version = trace["suite_version"]
    assert version["id"] == eval_world.suites["v1"].id
    assert version["prompt_sha256"] == eval_world.suites["v1"].suite.prompt_sha256
    assert (
        version["datasets"][0]["digest"]
        == services.datasets.store.find_version(
            services.datasets.store.dataset(PROJECT, eval_world.dataset).id, number=1, digest_prefix=None
        ).digest
    )
    assert version["harness"] == {"name": "lm-eval", "version": "0.4.13", "model": "tiny_lm"}
    assert trace["result"]["harness_version"] == "0.4.13"
    assert trace["run"]["attempts"][0]["job_id"]  # the Slurm job of the eval
    assert trace["artifact"]["run"]["id"] == eval_world.training["strong"]  # the training run
    assert trace["artifact"]["run"]["params"] == {} and trace["artifact"]["run"]["artifacts"]
    evals = api("watcher", "GET", f"/lineage/artifacts/{eval_world.artifacts['strong']}/evals").json()
    assert eval_world.evals["strong"].id in [e["id"] for e in evals["eval_runs"]]
    assert any(e["result"] and e["result"]["id"] == result for e in evals["eval_runs"])
    hidden = api("outsider", "GET", f"/lineage/artifacts/{eval_world.artifacts['strong']}/evals")
    assert hidden.status_code == 404


def test_a_non_member_learns_nothing_of_an_artifact(api, eval_world):
    """Issue 26 item 6: a 404 for another project's artifact reads exactly like one for no artifact at
    all (no "(n in projects you are not a member of)"), and no answer counts what it leaves out."""
    real = eval_world.artifacts["strong"]
    made_up = "0" * 64
    for path in (
        "/lineage/artifacts/{}",
        "/lineage/artifacts/{}/evals",
        "/lineage/artifacts/{}/releases",
        "/evidence/artifacts/{}",
    ):
        hidden = api("outsider", "GET", path.format(real))
        missing = api("outsider", "GET", path.format(made_up))
        assert hidden.status_code == missing.status_code == 404, (path, hidden.text)
        assert hidden.json() == {
            **missing.json(),
            "detail": missing.json()["detail"].replace(made_up, real),
        }, path
        assert "member" not in hidden.text, hidden.text
    for path in ("/lineage/artifacts/{}", "/lineage/artifacts/{}/evals", "/lineage/artifacts/{}/releases"):
        shown = api("watcher", "GET", path.format(real))
        assert shown.status_code == 200 and "hidden" not in shown.json(), (path, shown.text)
    trace = api("watcher", "GET", f"/lineage/eval-results/{eval_world.results['strong']}")
    assert trace.status_code == 200 and "hidden" not in trace.json()
