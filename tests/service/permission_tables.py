"""The permission matrix's entries for the evaluation, registry and evidence routes (test_access).

Each entry: the request to make, and the status every role gets. Allowed writes are made to fail
after the permission check, so the matrix changes nothing.
"""

from __future__ import annotations

from tests.service.conftest import PROJECT


def eval_expectations(ev: dict, in_project: dict, read_all: dict) -> dict[str, tuple[dict, dict[str, int]]]:
    """The evaluation routes; allowed writes are made to fail after the permission check (nothing changes)."""
    suite = {"project": PROJECT, "name": ev["suite"]}
    result = {"result_id": ev["result"]}
    write = {"admin": 0, "lead": 0, "member": 0, "viewer": 403, "outsider": 404, "anonymous": 401}
    return {
        # the same content again: allowed callers get the existing version (200), nothing is written
        "POST /eval/suites": (
            {"json": ev["definition"]},
            {**write, "admin": 200, "lead": 200, "member": 200},
        ),
        "GET /eval/suites": ({}, read_all),
        "GET /eval/suites/{project}/{name}": ({"path": suite}, in_project),
        # nothing to change: refused after the eval.suite.settings check (leads)
        "PUT /eval/suites/{project}/{name}/settings": (
            {"path": suite, "json": {}},
            {**write, "admin": 422, "lead": 422, "member": 403},
        ),
        "GET /eval/suites/{project}/{name}/versions/{version}": (
            {"path": {**suite, "version": "1"}},
            in_project,
        ),
        # a queue the project does not have: refused by the run's admission, after the eval.run check
        "POST /eval/runs": (
            {"json": {"suite": ev["suite_ref"], "artifact_sha256": ev["artifact"], "queue": "no-such-queue"}},
            {**write, "admin": 422, "lead": 422, "member": 422},
        ),
        # no results file among the files: refused after the eval.import check (members)
        "POST /eval/suites/{project}/{name}/versions/{version}/imports": (
            {
                "path": {**suite, "version": "1"},
                "json": {"artifact_sha256": ev["artifact"], "files": [{"name": "notes.txt", "content": "x"}]},
            },
            {**write, "admin": 422, "lead": 422, "member": 422},
        ),
        "GET /eval/runs": ({}, read_all),
        "GET /eval/runs/{eval_run_id}": ({"path": {"eval_run_id": ev["eval_run"]}}, in_project),
        "GET /eval/results/{result_id}": ({"path": result}, in_project),
        # a baseline that does not exist: looked up after the eval.gate check
        "POST /eval/results/{result_id}/gate": (
            {"path": result, "json": {"baseline": "er-0000000000000000"}},
            {**write, "admin": 404, "lead": 404, "member": 404},
        ),
        "GET /eval/gates/{gate_id}": ({"path": {"gate_id": ev["gate"]}}, in_project),
        "GET /eval/compare/{a}/{b}": ({"path": {"a": ev["result"], "b": ev["result"]}}, in_project),
        # a sample the result does not have: checked after the eval.review check (leads and reviewers)
        "POST /eval/reviews": (
            {"json": {"target": ev["result"], "verdict": "approve", "samples": [{"task": "x", "id": "0"}]}},
            {**write, "admin": 422, "lead": 422, "member": 403},
        ),
        "GET /eval/reviews": ({"params": {"target": ev["result"]}}, in_project),
        "GET /lineage/eval-results/{result_id}": ({"path": result}, in_project),
        "GET /lineage/artifacts/{sha256}/evals": ({"path": {"sha256": ev["artifact"]}}, in_project),
    }


def release_expectations(
    ev: dict, run_id: str, in_project: dict, read_all: dict
) -> dict[str, tuple[dict, dict[str, int]]]:
    """The registry and evidence routes; allowed writes fail after the permission check (nothing changes)."""
    model = {"project": PROJECT, "name": ev["model"]}
    release = {**model, "version": "1"}
    req = {"request_id": ev["request"]}
    no = {"viewer": 403, "outsider": 404, "anonymous": 401}
    long_note = {"note": "x" * 5000}  # too long: refused after the release.approve check
    bad_policy = {"roles": ["lead"], "gate_suite": "no/such-suite"}  # refused after the release.policy check
    return {
        # the model exists already: 409 after the release.create check
        "POST /models": ({"json": model}, {"admin": 409, "lead": 409, "member": 409, **no}),
        "GET /models": ({}, read_all),
        "GET /models/{project}/{name}": ({"path": model}, in_project),
        # no artifact with that sha256: looked up after the release.create check
        "POST /models/{project}/{name}/releases": (
            {"path": model, "json": {"artifact_sha256": "0" * 64}},
            {"admin": 404, "lead": 404, "member": 404, **no},
        ),
        "GET /models/{project}/{name}/releases": ({"path": model}, in_project),
        "GET /models/{project}/{name}/releases/{version}": ({"path": release}, in_project),
        # active already: 409 after the release.status check (leads)
        "POST /models/{project}/{name}/releases/{version}/status": (
            {"path": release, "json": {"status": "active", "reason": "matrix"}},
            {"admin": 409, "lead": 409, "member": 403, **no},
        ),
        "GET /models/{project}/{name}/aliases": ({"path": model}, in_project),
        # the alias's policy needs an approval nobody gave: 409 after the release.promote check
        "POST /models/{project}/{name}/aliases/{alias}": (
            {"path": {**model, "alias": "matrix"}, "json": {"version": 1}},
            {"admin": 409, "lead": 409, "member": 409, **no},
        ),
        # the checks of a move, nothing moved: those who may move aliases (release.promote, as above)
        "GET /models/{project}/{name}/aliases/{alias}/check": (
            {"path": {**model, "alias": "matrix"}, "params": {"version": 1}},
            {"admin": 200, "lead": 200, "member": 200, **no},
        ),
        # the hand-off (no MLflow configured here: a sync is refused after the permission check)
        "GET /models/{project}/{name}/mirror": ({"path": model}, in_project),
        "GET /runs/{run_id}/handoff": ({"path": {"run_id": run_id}}, in_project),
        "POST /runs/{run_id}/handoff/mlflow": (
            {"path": {"run_id": run_id}},
            {"admin": 409, "lead": 409, "member": 409, **no},
        ),
        "GET /handoff/items": ({}, read_all),
        "POST /handoff/items/{item_id}/replay": (
            {"path": {"item_id": "hx-0000000000000000"}},
            {"admin": 404, "lead": 403, "member": 403, "viewer": 403, "outsider": 403, "anonymous": 401},
        ),
        "GET /models/{project}/{name}/history": ({"path": model, "params": {"alias": "matrix"}}, in_project),
        "GET /models/{project}/{name}/policies": ({"path": model}, in_project),
        "PUT /models/{project}/{name}/policies/{alias}": (
            {"path": {**model, "alias": "matrix"}, "json": bad_policy},
            {"admin": 422, "lead": 422, "member": 403, **no},
        ),
        "PUT /projects/{project}/alias-policies/{alias}": (
            {"path": {"project": PROJECT, "alias": "matrix"}, "json": bad_policy},
            {"admin": 422, "lead": 422, "member": 403, **no},
        ),
        # an alias that is not valid: checked after the release.request check
        "POST /models/{project}/{name}/promotions": (
            {"path": model, "json": {"alias": "Not-Valid", "version": 1}},
            {"admin": 422, "lead": 422, "member": 422, **no},
        ),
        "GET /models/{project}/{name}/promotions": ({"path": model}, in_project),
        "POST /promotions/{request_id}/approve": (
            {"path": req, "json": long_note},
            {"admin": 422, "lead": 422, "member": 403, **no},
        ),
        "POST /promotions/{request_id}/reject": (
            {"path": req, "json": long_note},
            {"admin": 422, "lead": 422, "member": 403, **no},
        ),
        "GET /lineage/artifacts/{sha256}/releases": ({"path": {"sha256": ev["artifact"]}}, in_project),
        "GET /evidence/runs/{run_id}": ({"path": {"run_id": run_id}}, in_project),
        "GET /evidence/releases/{project}/{name}/{version}": ({"path": release}, in_project),
        "GET /evidence/artifacts/{sha256}": ({"path": {"sha256": ev["artifact"]}}, in_project),
    }
