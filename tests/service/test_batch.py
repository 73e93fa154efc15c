"""POST /runs/batch: many runs in one request, each exactly once, with per-item answers.

Real Slurm, both databases. Jobs are submitted held (nothing runs) and cancelled after each test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm.cli import SlurmCLI
from gateway.api import create_app
from gateway.core.projects import Member, Project, Quota
from gateway.core.runs.values import RunFilter
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.slurm.states import RunState
from gateway.core.slurm.tags import parse_comment
from gateway.core.spec.run_spec import build_spec
from gateway.errors import BatchRejected, QuotaExceeded, SpecError
from gateway.services.runs.admission import Admitted, Walltime
from gateway.services.runs.batch_caps import within_caps
from gateway.services.runs.batch_items import BatchItem, PendingItem
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.conftest import OPERATOR, PROJECT, unique_tag
from tests.service.test_crash import past_grace

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]

_TAGS: list[str] = []


def spec(tag: str, **changes) -> dict:
    base = {
        "name": "batch",
        "project": PROJECT,
        "queue": "cpu",
        "command": "true",
        "workdir": "/tmp",
        "hold": True,
        "tags": [tag],
        "resources": {"mem_gb": 0.1, "walltime_min": 2},
    }
    return {**base, **changes}


def own_tag() -> str:
    tag = unique_tag()
    _TAGS.append(tag)
    return tag


def slurm_jobs_by_run() -> dict[str, list[str]]:
    """Every job in Slurm's queue by the run id in its comment: one squeue, without the gateway."""
    out = subprocess.run(
        ["squeue", "-h", "--all", "--states=all", "-o", "%i %k"], capture_output=True, text=True, check=True
    ).stdout
    found: dict[str, list[str]] = defaultdict(list)
    for line in out.splitlines():
        job, _, comment = line.partition(" ")
        parts = parse_comment(comment)
        if parts is not None:
            found[parts.run_id].append(job)
    return found


@pytest.fixture(autouse=True)
def _cancel_own_jobs(request) -> Iterator[None]:
    yield
    tags = list(_TAGS)
    _TAGS.clear()
    if not tags or "services" not in request.fixturenames:
        return
    store = request.getfixturevalue("services").runs.store
    ids = {run.id for tag in tags for run in store.list_runs(RunFilter(tag=tag, limit=500)).items}
    jobs = [j for run_id, found in slurm_jobs_by_run().items() if run_id in ids for j in found]
    if jobs:
        subprocess.run(["scancel", *jobs], check=False, capture_output=True)


@pytest.fixture(scope="module")
def api(services, tester_token):
    with TestClient(create_app(services=services)) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        yield client


def test_a_batch_submits_every_run_once_and_answers_per_item(api, services):
    tag = own_tag()
    body = {"items": [{"spec": spec(tag, params={"i": i})} for i in range(5)]}
    response = api.post("/runs/batch", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["submitted"], answer["failed"], answer["replayed"]) == (5, 0, 0)
    assert [i["index"] for i in answer["items"]] == list(range(5))
    assert all(i["status"] == 201 and i["run"]["state"] == "queued" for i in answer["items"])
    runs = {i["run"]["id"]: i["run"]["job_id"] for i in answer["items"]}
    jobs = slurm_jobs_by_run()
    assert {r: jobs[r] for r in runs} == {r: [j] for r, j in runs.items()}, "one Slurm job per run"
    recorded = services.runs.store.list_runs(RunFilter(tag=tag)).items
    assert {r.id for r in recorded} == set(runs)
    assert sorted(services.runs.store.get_run(r).spec.params["i"] for r in runs) == list(range(5))
    verdict = services.audit.verify(services.access.principal("admin"))
    assert verdict.problems == (), "the chain holds after append_many"


def test_all_or_none_refuses_the_batch_naming_each_bad_item(api, services):
    tag = own_tag()
    items = [
        {"spec": spec(tag)},
        {"spec": spec(tag, queue="nosuch")},
        {"spec": spec(tag)},
        {"spec": spec(tag, queue="gpu", resources={"gpus_per_node": 1, "gpu_type": "x", "walltime_min": 2})},
    ]
    response = api.post("/runs/batch", json={"items": items})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "batch_rejected" and "2 of 4" in body["detail"] and "partial" in body["detail"]
    assert [i["index"] for i in body["items"]] == [1, 3]
    queue, mem = body["items"]
    assert queue["status"] == 422 and queue["error"]["detail"][0]["loc"] == [
        "body",
        "items",
        1,
        "spec",
        "queue",
    ]
    assert mem["error"]["detail"][0]["loc"] == ["body", "items", 3, "spec", "resources", "gpu_type"]
    assert services.runs.store.list_runs(RunFilter(tag=tag)).items == [], "nothing was recorded"


def test_partial_submits_the_good_items_and_answers_the_bad_ones(api, services):
    tag = own_tag()
    items = [{"spec": spec(tag)}, {"spec": spec(tag, project="nosuch")}, {"spec": spec(tag, queue="gpu")}]
    items[2]["spec"]["resources"] = {"gpus_per_node": 1, "gpu_type": "nosuch", "walltime_min": 2}
    response = api.post("/runs/batch", json={"items": items, "partial": True})
    assert response.status_code == 200, response.text
    good, missing, gpu = response.json()["items"]
    assert good["status"] == 201 and good["run"]["job_id"]
    assert missing["status"] == 404 and missing["run"] is None and "nosuch" in missing["error"]["detail"]
    assert gpu["status"] == 422 and gpu["error"]["error"] == "invalid_request"
    assert gpu["error"]["detail"][0]["loc"] == ["body", "items", 2, "spec", "resources", "gpu_type"]
    assert [r.id for r in services.runs.store.list_runs(RunFilter(tag=tag)).items] == [good["run"]["id"]]
    # a spec that is no valid RunSpec makes the request itself invalid, with its index and path
    malformed = api.post(
        "/runs/batch", json={"items": [{"spec": spec(tag)}, {"spec": {"name": 3}}], "partial": True}
    )
    assert malformed.status_code == 422 and malformed.json()["error"] == "invalid_request"
    assert all(i["loc"][:4] == ["body", "items", 1, "spec"] for i in malformed.json()["detail"])


def test_the_same_batch_key_replays_every_run(api, services):
    tag, key = own_tag(), f"b-{uuid.uuid4()}"
    body = {"items": [{"spec": spec(tag, params={"i": i})} for i in range(3)]}
    first = api.post("/runs/batch", json=body, headers={"Idempotency-Key": key})
    again = api.post("/runs/batch", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 200, again.text
    assert again.headers.get("Idempotent-Replayed") == "true" and "Idempotent-Replayed" not in first.headers
    ids = [i["run"]["id"] for i in first.json()["items"]]
    assert [i["run"]["id"] for i in again.json()["items"]] == ids
    assert all(i["replayed"] and i["status"] == 200 for i in again.json()["items"])
    assert len(services.runs.store.list_runs(RunFilter(tag=tag)).items) == 3
    jobs = slurm_jobs_by_run()
    assert all(len(jobs[r]) == 1 for r in ids)
    # an item's own key is that of a single POST /runs: the same run either way
    single = api.post("/runs", json=spec(tag, params={"i": 9}), headers={"Idempotency-Key": f"{key}-own"})
    mixed = api.post(
        "/runs/batch",
        json={"items": [{"spec": spec(tag, params={"i": 9}), "idempotency_key": f"{key}-own"}]},
    )
    assert mixed.json()["items"][0]["run"]["id"] == single.json()["id"]
    # the same batch key with a changed item: that item is a conflict, and all-or-none refuses
    changed = {"items": [*body["items"][:2], {"spec": spec(tag, params={"i": 99})}]}
    refused = api.post("/runs/batch", json=changed, headers={"Idempotency-Key": key})
    assert refused.status_code == 422 and refused.json()["items"][0]["index"] == 2
    assert refused.json()["items"][0]["status"] == 409


def test_batch_bounds(services, principal, monkeypatch):
    with pytest.raises(SpecError, match="1 to 2 runs"):
        monkeypatch.setattr(
            services.runs, "settings", services.settings.model_copy(update={"batch_max_items": 2})
        )
        services.runs.submit_batch([BatchItem(spec("x"))] * 3, principal=principal)
    monkeypatch.undo()
    with pytest.raises(SpecError, match="its own Idempotency-Key"):
        services.runs.submit_batch(
            [BatchItem(spec("x"), "same-key-1"), BatchItem(spec("x"), "same-key-1")], principal=principal
        )


def test_the_batch_counts_its_runs_together_against_the_caps():
    """Each run fits the caps alone; the batch does not: the items past a cap are refused."""
    capped = Quota(gpu_hours_per_month=3, jobs_in_queue=10)
    project = Project(
        name="p",
        description="",
        slurm_account="p",
        quota=Quota(jobs_in_queue=4),
        members=[Member(user="u", role="member", quota=capped)],
        queues=[],
    )
    admitted = Admitted(project, SubmitTarget(partition="gpu", account="p"), "u", Walltime(60, "given"))

    def item(index: int, gpus: int, sweep: int | None = None) -> PendingItem:
        data = spec("t", queue="gpu", resources={"gpus_per_node": gpus, "walltime_min": 60})
        if sweep:
            data["sweep"] = {"grid": {"seed": list(range(sweep))}}
        return PendingItem(index, build_spec(data), None, admitted)

    class Who:
        user = "u"

    outcomes: dict = {}
    items = [item(0, 1), item(1, 1), item(2, 2), item(3, 0, sweep=2), item(4, 0)]
    fitting = within_caps(items, Who(), outcomes)  # type: ignore[arg-type]
    assert [p.index for p in fitting] == [0, 1, 3]
    assert set(outcomes) == {2, 4}
    assert isinstance(outcomes[2].error, QuotaExceeded) and "4 GPU-hours" in str(outcomes[2].error)
    assert "5 jobs" in str(outcomes[4].error) and "project p (4)" in str(outcomes[4].error)


@pytest.mark.parametrize(("when", "at"), [("started", 1), ("before", 3), ("after", 3)])
def test_a_batch_killed_at_any_point_yields_one_job_or_none_per_run(settings, services, principal, when, at):
    """kill -9 of the submitting process in the first sbatch (every run committed, none sent), or
    in the middle of the sends (before an sbatch got its script, after one answered): after
    reconciliation every run has exactly the one job Slurm holds for its tag, or is never
    submitted with none; the same batch sent again with the same key submits nothing more."""
    tag, key = own_tag(), f"crash-{uuid.uuid4()}"
    specs = [spec(tag, params={"i": i}) for i in range(6)]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.service.crash_driver",
            settings.database_url,
            str(settings.runs_dir),
            when,
            json.dumps(specs),
            key,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "CRASH_AT": str(at)},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    runs = services.runs.store.list_runs(RunFilter(tag=tag)).items
    assert len(runs) == 6, "the batch was committed in one transaction before any sbatch"
    past_grace(settings, runs[0].attempts[0])
    services.refresher.reconcile()
    jobs = slurm_jobs_by_run()
    for run in runs:
        settled = services.runs.store.get_run(run.id).latest
        assert len(jobs.get(run.id, [])) <= 1, f"{run.id} has {jobs[run.id]}"
        if jobs.get(run.id):
            assert settled.state in (RunState.QUEUED, RunState.HELD) and settled.job_id == jobs[run.id][0]
        else:
            assert settled.state is RunState.NEVER_SUBMITTED and settled.job_id is None
    if when == "started":
        assert not any(jobs.get(r.id) for r in runs), "it died before the first script was sent"
    # all or none (the default): a replayed item's error (never submitted) refuses nothing
    again = services.runs.submit_batch(
        [BatchItem(s) for s in specs], principal=principal, idempotency_key=key
    )
    assert {o.run.id for o in again.items if o.run} == {r.id for r in runs}
    assert all(o.replayed for o in again.items)
    never = {r.id for r in runs if not jobs.get(r.id)}
    assert {o.run.id for o in again.items if o.error is not None and o.run} == never
    assert slurm_jobs_by_run().keys() & {r.id for r in runs} == jobs.keys() & {r.id for r in runs}
    assert len(services.runs.store.list_runs(RunFilter(tag=tag)).items) == 6


def test_all_or_none_service_error_lists_items(services, principal):
    tag = own_tag()
    with pytest.raises(BatchRejected) as refused:
        services.runs.submit_batch([BatchItem(spec(tag)), BatchItem({"queue": 1})], principal=principal)
    assert [i for i, _ in refused.value.items] == [1] and refused.value.total == 2


class CountingRunner(LocalRunner):
    """The real local runner, counting the sbatch processes running at one moment (the most seen)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live = self.most = self.sbatch = 0

    def run(self, argv, **kwargs):
        if argv[0] != "sbatch" or "--test-only" in argv:
            return super().run(argv, **kwargs)
        with self.lock:
            self.live, self.sbatch = self.live + 1, self.sbatch + 1
            self.most = max(self.most, self.live)
        try:
            return super().run(argv, **kwargs)
        finally:
            with self.lock:
                self.live -= 1


def test_the_cli_backend_runs_several_sbatch_at_once_never_more_than_the_bound(settings, services, principal):
    """9 runs with batch_submit_parallel 3: 9 sbatch processes, more than one at a time, never 4."""
    runner = CountingRunner()
    bounded = build_services(
        Settings(**{**settings.model_dump(), "batch_submit_parallel": 3}),
        slurm=SlurmCLI(runner),
        upgrade=False,
    )
    try:
        tag = own_tag()
        items = [BatchItem(spec(tag, params={"i": i})) for i in range(9)]
        outcome = bounded.runs.submit_batch(items, principal=principal)
        assert outcome.failed == 0 and all(o.run and o.run.latest.job_id for o in outcome.items)
        assert runner.sbatch == 9, "one sbatch per run"
        assert 2 <= runner.most <= 3, f"at most {runner.most} sbatch ran at once"
    finally:
        bounded.close()


def test_a_batch_over_the_jobs_cap_of_a_real_project_is_refused_whole_or_cut_at_the_cap(api, services):
    """Project batchcap may queue 3 jobs: 4 runs that fit one by one are refused together (422,
    the 4th named with the totals, nothing recorded); with partial the first 3 are submitted."""
    tag = own_tag()
    items = [{"spec": spec(tag, project="batchcap", params={"i": i})} for i in range(4)]
    capper = {"Authorization": f"Bearer {services.auth.issue_token(OPERATOR, 'capper', name='pytest')[0]}"}
    refused = api.post("/runs/batch", json={"items": items}, headers=capper)
    assert refused.status_code == 422 and refused.json()["error"] == "batch_rejected", refused.text
    (over,) = refused.json()["items"]
    assert over["index"] == 3 and over["error"]["error"] == "quota_exceeded"
    assert "queues 4 jobs, over the jobs-in-queue cap of project batchcap (3)" in over["error"]["detail"]
    assert services.runs.store.list_runs(RunFilter(tag=tag)).items == [], "nothing was recorded"
    cut = api.post("/runs/batch", json={"items": items, "partial": True}, headers=capper)
    assert cut.status_code == 200, cut.text
    assert [i["status"] for i in cut.json()["items"]] == [201, 201, 201, 422]
    made = {i["run"]["id"] for i in cut.json()["items"][:3]}
    jobs = slurm_jobs_by_run()
    assert all(len(jobs[r]) == 1 for r in made)
    assert {r.id for r in services.runs.store.list_runs(RunFilter(tag=tag)).items} == made
