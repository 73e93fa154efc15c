"""Who may do what, through the API, for every route: the permission matrix, and what a role's
refusal looks like in a batch and in another project's runs.

The same roles' tokens, OS users and the audit trail: test_access_accounts.py, test_access_audit.py.
"""

from __future__ import annotations

import uuid

import pytest

from gateway.adapters.files import scan
from gateway.core.spec.run_spec import build_spec
from gateway.services.lineage.datasets import Registration
from tests.service.access_setup import ROLES, call
from tests.service.conftest import OPERATOR, PROJECT, refresh_until, unique_tag
from tests.service.permission_tables import eval_expectations, release_expectations


@pytest.fixture(scope="module")
def ended_sweep(services, principal):
    """A finished sweep of two tasks of project ``test`` (its tasks: GET /runs/{id}/tasks)."""
    spec = build_spec(
        {
            "name": "matrix-sweep",
            "project": PROJECT,
            "queue": "cpu",
            "command": "echo hi",
            "workdir": "/tmp",
            "tags": [unique_tag()],
            "resources": {"mem_gb": 0.1},
            "sweep": {"params": [{"i": 0}, {"i": 1}]},
        }
    )
    run = services.runs.submit(spec, principal=principal)
    return refresh_until(services, run.id).id


@pytest.fixture(scope="module")
def dataset(services, principal, tmp_path_factory):
    """A one-file dataset of project ``test`` (name, its manifest, the file's sha256)."""
    path = tmp_path_factory.mktemp("matrix-data") / "rows.csv"
    path.write_text("a,b\n1,2\n")
    files = [e.to_dict() for e in scan(path).entries]
    name = unique_tag()
    req = Registration(PROJECT, name, files, kind="file", path=str(path))
    services.datasets.register(req, principal=principal)
    return {"name": name, "files": files, "sha256": files[0]["sha256"], "path": str(path)}


MODULES = ["gcc/12.2"]


@pytest.fixture(scope="module")
def environment(services, principal) -> str:
    """A module-list environment of the project (no build job), its name."""
    from gateway.services.envs.registry import EnvRegistration

    name = f"matrix-mods-{uuid.uuid4().hex[:6]}"
    services.environments.register(
        EnvRegistration(project=PROJECT, name=name, kind="modules", modules=MODULES), principal=principal
    )
    return name


# Every route x every role: the status the caller gets. Built so that allowed calls
# change nothing (dry runs, an ended run, a queue that does not exist).
def expectations(
    run_id: str, spare_token: int, site: dict, dataset: dict, evals: dict, sweep_id: str, environment: str
) -> dict[str, tuple[dict, dict[str, int]]]:
    read_all = {"admin": 200, "lead": 200, "member": 200, "viewer": 200, "outsider": 200, "anonymous": 401}
    in_project = {"admin": 200, "lead": 200, "member": 200, "viewer": 200, "outsider": 404, "anonymous": 401}
    admin_only = {"admin": 200, "lead": 403, "member": 403, "viewer": 403, "outsider": 403, "anonymous": 401}
    share = {"admin": 200, "lead": 200, "member": 403, "viewer": 403, "outsider": 404, "anonymous": 401}
    bad_queue = {"name": "x", "project": PROJECT, "queue": "no-such-queue", "command": "true"}
    ds = {"project": PROJECT, "name": dataset["name"]}
    env = {"project": PROJECT, "name": environment}
    env_ref = f"{PROJECT}/{environment}"
    return {
        "GET /healthz": ({}, {r: 200 for r in ROLES}),
        # For scrapers, not users: only the metrics token opens it, no user token does
        # (tests/service/test_metrics.py reads it with a metrics token).
        "GET /metrics": ({}, {r: 403 for r in ROLES}),
        "POST /runs": (
            {"json": bad_queue},
            {"admin": 422, "lead": 422, "member": 422, "viewer": 403, "outsider": 404, "anonymous": 401},
        ),
        # a check admits without submitting: the same roles as a submission, nothing reaches Slurm
        "POST /runs/check": (
            {"json": bad_queue},
            {"admin": 422, "lead": 422, "member": 422, "viewer": 403, "outsider": 404, "anonymous": 401},
        ),
        # a batch is admitted item by item: a viewer's 403 and an outsider's 404 are its items' statuses,
        # inside the all-or-none refusal (422 batch_rejected: test_batch_refusal_carries_each_roles_status)
        "POST /runs/batch": (
            {"json": {"items": [{"spec": bad_queue}]}},
            {"admin": 422, "lead": 422, "member": 422, "viewer": 422, "outsider": 422, "anonymous": 401},
        ),
        "GET /runs": ({}, read_all),
        "GET /runs/{run_id}": ({"path": {"run_id": run_id}}, in_project),
        "GET /runs/{run_id}/telemetry": ({"path": {"run_id": run_id}}, in_project),
        # everyone signed in may ask; each sees the records of their own projects (an outsider: none)
        "GET /reports/{kind}": ({"path": {"kind": "cost"}, "params": {"by": "project"}}, read_all),
        # retention: holds and storage of one's own projects; a blank reason is refused after the
        # retention.hold check (leads), so no hold is made; no such hold to lift; a sweep is a dry run
        "GET /retention/holds": ({}, read_all),
        "GET /retention/storage": ({}, read_all),
        "GET /retention/runs/{run_id}": ({"path": {"run_id": run_id}}, in_project),
        "POST /retention/holds": (
            {"json": {"target_type": "run", "target_id": run_id, "reason": "   "}},
            {"admin": 422, "lead": 422, "member": 403, "viewer": 403, "outsider": 404, "anonymous": 401},
        ),
        "POST /retention/holds/{hold_id}/lift": (
            {"path": {"hold_id": "hold-000000000000"}, "json": {"reason": "x"}},
            {**{r: 404 for r in ROLES}, "anonymous": 401},
        ),
        "POST /retention/sweep": ({"params": {"dry_run": "true", "project": PROJECT}}, admin_only),
        "POST /runs/{run_id}/cancel": (
            {"path": {"run_id": run_id}},
            {"admin": 200, "lead": 200, "member": 403, "viewer": 403, "outsider": 404, "anonymous": 401},
        ),
        "GET /runs/{run_id}/logs": ({"path": {"run_id": run_id}}, in_project),
        "GET /runs/{run_id}/tasks": ({"path": {"run_id": sweep_id}}, in_project),
        "GET /runs/{run_id}/tasks/{index}": ({"path": {"run_id": sweep_id, "index": 1}}, in_project),
        "GET /runs/{run_id}/cost": ({"path": {"run_id": run_id}}, in_project),
        # a since in the future: refused after the site.admin check, so nothing is read
        "POST /admin/accounting/ingest": (
            {"json": {"since": "2999-01-01T00:00:00Z"}},
            {**admin_only, "admin": 422},
        ),
        "POST /runs/{run_id}/rerun": (
            {"path": {"run_id": run_id}, "json": {"set": ["queue=no-such-queue"]}},
            # a member's rerun of someone else's run would run as its owner: a lead's right (or as_me)
            {"admin": 422, "lead": 422, "member": 403, "viewer": 403, "outsider": 404, "anonymous": 401},
        ),
        "GET /projects": ({}, read_all),
        "GET /projects/{project}": ({"path": {"project": PROJECT}}, in_project),
        "GET /projects/{project}/usage": ({"path": {"project": PROJECT}}, in_project),
        "GET /tokens": ({}, read_all),
        "POST /tokens": ({"json": {"name": "matrix"}}, {**{r: 201 for r in ROLES}, "anonymous": 401}),
        "DELETE /tokens/{token_id}": (
            {"path": {"token_id": spare_token}},
            {"admin": 200, "lead": 404, "member": 404, "viewer": 404, "outsider": 404, "anonymous": 401},
        ),
        "GET /queue": ({}, admin_only),
        "GET /admin/site": ({}, admin_only),
        "POST /admin/site": ({"json": site, "params": {"dry_run": "true"}}, admin_only),
        "POST /admin/sync-slurm": ({"params": {"dry_run": "true"}}, admin_only),
        "GET /audit": (
            {},
            {"admin": 200, "lead": 200, "member": 403, "viewer": 403, "outsider": 200, "anonymous": 401},
        ),
        "GET /audit/verify": ({}, admin_only),
        "GET /runs/{run_id}/outputs": ({"path": {"run_id": run_id}}, in_project),
        "GET /runs/{run_id}/compare/{other_id}": (
            {"path": {"run_id": run_id, "other_id": run_id}},
            in_project,
        ),
        "GET /lineage/runs/{run_id}": ({"path": {"run_id": run_id}}, in_project),
        "GET /lineage/artifacts/{sha256}": ({"path": {"sha256": dataset["sha256"]}}, in_project),
        "GET /lineage/datasets/{project}/{name}/{version}": ({"path": {**ds, "version": "1"}}, in_project),
        "GET /datasets": ({}, read_all),
        "GET /datasets/{project}/{name}": ({"path": ds}, in_project),
        "POST /datasets/{project}/{name}/versions": (
            # the same content again: allowed callers get the existing version (200), nothing is written
            {"path": ds, "json": {"files": dataset["files"], "kind": "file", "path": dataset["path"]}},
            {"admin": 200, "lead": 200, "member": 200, "viewer": 403, "outsider": 404, "anonymous": 401},
        ),
        "GET /datasets/{project}/{name}/versions": ({"path": ds}, in_project),
        "GET /datasets/{project}/{name}/versions/{version}": (
            {"path": {**ds, "version": "latest"}},
            in_project,
        ),
        "GET /datasets/{project}/{name}/diff": ({"path": ds, "params": {"a": "1", "b": "1"}}, in_project),
        # share then unshare (in this order): the dataset ends as it began
        "PUT /datasets/{project}/{name}/shares/{other}": ({"path": {**ds, "other": "pa"}}, share),
        "DELETE /datasets/{project}/{name}/shares/{other}": ({"path": {**ds, "other": "pa"}}, share),
        # a module list registered by the fixture: registering the same content again gives it back (200)
        "GET /environments": ({}, read_all),
        "GET /environments/diff": ({"params": {"a": f"{env_ref}@1", "b": f"{env_ref}@1"}}, in_project),
        "GET /environments/{project}/{name}": ({"path": env}, in_project),
        "POST /environments/{project}/{name}/versions": (
            {"path": env, "json": {"kind": "modules", "modules": MODULES}},
            {"admin": 200, "lead": 200, "member": 200, "viewer": 403, "outsider": 404, "anonymous": 401},
        ),
        "GET /environments/{project}/{name}/versions": ({"path": env}, in_project),
        "GET /environments/{project}/{name}/versions/{version}": (
            {"path": {**env, "version": "1"}},
            in_project,
        ),
        "GET /environments/{project}/{name}/versions/{version}/advisories": (
            {"path": {**env, "version": "1"}},
            in_project,
        ),
        "GET /runs/{run_id}/environment": ({"path": {"run_id": run_id}}, in_project),
        **eval_expectations(evals, in_project, read_all),
        **release_expectations(evals, run_id, in_project, read_all),
    }


@pytest.fixture(scope="module")
def evals(services, principal, eval_world) -> dict:
    """Ids of the eval world's records (and one gate decision) for the matrix."""
    strong = eval_world.results["strong"]
    version = eval_world.suites["v1"]
    gate = services.gates.gate(strong, principal=principal, baseline_id=eval_world.results["weak"])
    model = f"matrix-{unique_tag()}"
    services.releases.register_model(PROJECT, model, principal=principal)
    services.releases.create_release(
        PROJECT,
        model,
        eval_world.artifacts["strong"],
        principal=principal,
        run_id=eval_world.training["strong"],
    )
    services.alias_policies.set_policy(PROJECT, model, "matrix", principal=principal, approvals=1)
    request = services.promotions.request(PROJECT, model, 1, "matrix", principal=principal)
    return {
        "model": model,
        "request": request.id,
        "suite": version.name,
        "suite_ref": version.ref,
        "definition": version.suite.model_dump(mode="json"),
        "artifact": eval_world.artifacts["strong"],
        "eval_run": eval_world.evals["strong"].id,
        "result": strong,
        "gate": gate.id,
    }


def test_permission_matrix_covers_every_route(
    app, services, tokens, ended_run, dataset, evals, ended_sweep, environment
):
    spare = services.auth.issue_token(OPERATOR, "admin", name="spare")[1].id
    site = services.site.export(OPERATOR).model_dump(mode="json")
    table = expectations(ended_run, spare, site, dataset, evals, ended_sweep, environment)
    routes = {
        f"{method.upper()} {path}"
        for path, operations in app.get("/openapi.json").json()["paths"].items()
        for method in operations
    }
    assert routes == set(table), f"routes without an entry in the permission matrix: {routes ^ set(table)}"
    wrong = []
    for route, (request, expected) in table.items():
        method, path = route.split(" ", 1)
        path = path.format(**request.get("path", {}))
        for role in ROLES:
            response = call(
                app, tokens, role, method, path, json=request.get("json"), params=request.get("params")
            )
            if response.status_code != expected[role]:
                wrong.append(f"{route} as {role}: {response.status_code}, expected {expected[role]}")
    assert not wrong, "\n".join(wrong)


def test_batch_refusal_carries_each_roles_status(app, tokens):
    """POST /runs/batch refuses all or none with 422; inside, each item has what POST /runs gives the
    role: 403 for a viewer, 404 for an outsider (the project is not theirs to see)."""
    spec = {"name": "x", "project": PROJECT, "queue": "cpu", "command": "true"}
    for role, status in (("viewer", 403), ("outsider", 404), ("member", 422)):
        body = {"items": [{"spec": spec if role != "member" else {**spec, "queue": "no-such-queue"}}]}
        answer = call(app, tokens, role, "POST", "/runs/batch", json=body).json()
        assert answer["error"] == "batch_rejected" and answer["items"][0]["status"] == status, (role, answer)


def test_nobody_sees_another_projects_runs(app, tokens, ended_run):
    listed = call(app, tokens, "outsider", "GET", "/runs").json()["items"]
    assert ended_run not in [r["id"] for r in listed]
    assert ended_run in [r["id"] for r in call(app, tokens, "viewer", "GET", "/runs").json()["items"]]
    for path in (f"/runs/{ended_run}", f"/runs/{ended_run}/logs"):
        response = call(app, tokens, "outsider", "GET", path)
        assert response.status_code == 404 and "script" not in response.text
