"""Eval runs beyond the happy path, on SQLite and PostgreSQL: a job that fails, a replayed request, and
an eval whose job runs (and whose files are read back) as another OS user.

- An artifact changed on disk after it was harvested: the eval job's pre-flight refuses it (its sha256
  is checked before the harness starts), the run fails as data_access, and the eval run is ``failed``
  with that class, nothing ingested. The request, sent twice with one Idempotency-Key, made one run.
- alice (OS user gwtalice) trains a model and evaluates it with the native harness in her project; the
  job runs as gwtalice, and the ingest reads her run's files through the run host as gwtalice.
"""

from __future__ import annotations

import os
import pwd
import time
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.adapters.files import scan
from gateway.api import create_app
from gateway.core.spec.run_spec import build_spec
from gateway.services.eval.runs import ArtifactChoice
from gateway.services.lineage.datasets import Registration
from gateway.wiring import build_services
from tests.service.conftest import PROJECT, unique_tag
from tests.service.eval_world import DATA, ROOT, settle, suite_data

pytestmark = pytest.mark.slurm


def _until_settled(services, eval_run_id: str, timeout_s: float = 60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        services.refresher.refresh()
        services.harvester.harvest_due()
        services.eval_ingest.ingest_due()
        found = services.evals.store.eval_run(eval_run_id)
        if found.status != "pending":
            return found
        time.sleep(0.5)
    raise AssertionError(f"eval run {eval_run_id} still pending after {timeout_s} s")


def test_an_artifact_changed_after_its_harvest_fails_the_eval_in_its_pre_flight(
    services, principal, tokens, eval_world
):
    spec = build_spec(
        {
            "name": "fake-model",
            "project": PROJECT,
            "queue": "cpu",
            "command": 'mkdir -p "$GW_RUN_DIR/outputs" && echo "{}" > "$GW_RUN_DIR/outputs/model.json"',
            "outputs": ["outputs/*"],
            "tags": [unique_tag()],
            "resources": {"mem_gb": 0.1},
        }
    )
    made = services.runs.submit(spec, principal=principal)
    settle(services, [made.id], cycles=True)
    (artifact,) = services.lineage.store.artifacts(made.id)
    model = Path(services.runs.store.get_run(made.id).run_dir) / artifact.path
    model.write_text('{"changed": "behind the gateway\'s back"}\n')
    body = {"suite": eval_world.suites["v1"].ref, "run_id": made.id}
    headers = {"Authorization": f"Bearer {tokens['tester']}", "Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    with TestClient(create_app(services=services)) as api:
        first = api.post("/eval/runs", json=body, headers=headers)
        again = api.post("/eval/runs", json=body, headers=headers)
    assert first.status_code == 201 and again.status_code == 201, (first.text, again.text)
    assert again.json()["id"] == first.json()["id"] and again.json()["run_id"] == first.json()["run_id"]
    assert again.headers.get("Idempotent-Replayed") == "true" and "Idempotent-Replayed" not in first.headers
    found = _until_settled(services, first.json()["id"])
    assert found.status == "failed" and "failure class data_access" in found.note, found.note
    assert "digest mismatch" in found.note or "does not match its sha256" in found.note, found.note
    assert found.result_id is None
    run = services.runs.store.get_run(found.run_id)
    assert run.state.value == "failed" and run.latest.failure["class"] == "data_access"


@pytest.fixture(scope="module")
def system_python_services(settings, services):
    """The session's gateway with eval jobs run by the system Python, which any OS user can run."""
    built = build_services(settings.model_copy(update={"eval_python": "/usr/bin/python3"}), upgrade=False)
    yield built
    built.close()


def test_an_eval_as_another_os_user_runs_and_is_read_back_as_that_user(system_python_services):
    services = system_python_services
    alice = services.access.principal("alice", source="pytest")
    tag = unique_tag()
    dataset = f"cloze-{tag}"
    files = [e.to_dict() for e in scan(DATA).entries]
    services.datasets.register(Registration("pa", dataset, files, path=str(DATA)), principal=alice)
    data = suite_data(dataset, f"native-{tag}", native=True) | {"project": "pa"}
    version, _ = services.eval_suites.register(data, principal=alice)
    spec = build_spec(
        {
            "name": "alice-lm",
            "project": "pa",
            "queue": "cpu",
            "command": "python3 examples/tiny_lm/train.py --order 2 --epochs 1",
            "workdir": str(ROOT),
            "outputs": ["outputs/*"],
            "tags": [tag],
            "resources": {"mem_gb": 0.5},
        }
    )
    trained = services.runs.submit(spec, principal=alice)
    settle(services, [trained.id], cycles=False)
    services.harvester.harvest_due()
    started = services.evals.start(
        version.ref, ArtifactChoice(run_id=trained.id, path="outputs/model.json"), principal=alice
    )
    found = _until_settled(services, started.eval_run.id, timeout_s=90)
    assert found.status == "ingested", found.note
    run = services.runs.store.get_run(found.run_id)
    assert run.os_user == "gwtalice"
    uid = pwd.getpwnam("gwtalice").pw_uid
    assert os.stat(Path(run.run_dir) / "eval" / "native.jsonl").st_uid == uid  # written by her job
    assert os.stat(run.run_dir).st_mode & 0o077 == 0  # private to her: read back through the agent
    result = services.gates.result(found.result_id, principal=alice)
    assert result.results.harness == "native" and set(result.sample_counts.values()) == {300}
    bob = services.access.principal("bob")
    with pytest.raises(Exception, match="no eval result"):
        services.gates.result(found.result_id, principal=bob)
