"""The evaluation store on SQLite and PostgreSQL: suite versions by content, results written once, and
per-sample scores of 100,000 samples x 10 tasks written and read back exactly, quickly."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from sqlalchemy import inspect

from gateway.adapters.files import scan
from gateway.core.audit.entry import AuditEntry
from gateway.core.eval.domain import ResultFile
from gateway.core.eval.results import EvalResults, MetricValue, TaskResult, TaskSamples
from gateway.core.runs.values import NewRun
from gateway.core.spec.run_spec import build_spec
from gateway.services.lineage.datasets import Registration
from gateway.store.eval.evals import NewEvalRun
from gateway.store.eval.results import EvalResultStore
from tests.service.conftest import PROJECT

TABLES = {
    "eval_suites",
    "eval_suite_versions",
    "eval_suite_datasets",
    "eval_runs",
    "eval_results",
    "eval_result_files",
    "eval_result_tasks",
    "eval_sample_scores",
    "gate_decisions",
    "eval_reviews",
}
N_SAMPLES, N_TASKS = 100_000, 10


def _suite(dataset: str, name: str, *, margin: float = 0.02, tasks: int = 2) -> dict:
    return {
        "project": PROJECT,
        "name": name,
        "datasets": [f"{dataset}@latest"],
        "prompt_template": "{{q}}",
        "harness": {"name": "native", "task_dir": "tasks/x", "program": "jobs/p.py"},
        "tasks": [
            {"name": f"t{i}", "metrics": [{"name": "acc", "higher_is_better": True}]} for i in range(tasks)
        ],
        "gate": {"regression": [{"metric": "acc", "method": "mcnemar", "margin": margin}]},
    }


@pytest.fixture(scope="module")
def dataset(services, principal, tmp_path_factory):
    path = tmp_path_factory.mktemp("evalstore") / "rows.txt"
    path.write_text("one\n")
    name = f"ds-{uuid.uuid4().hex[:8]}"
    files = [e.to_dict() for e in scan(path).entries]
    services.datasets.register(
        Registration(PROJECT, name, files, kind="file", path=str(path)), principal=principal
    )
    return {"name": name, "path": path}


def test_the_migration_makes_the_eval_tables(services):
    assert set(inspect(services.db.engine).get_table_names()) >= TABLES


def test_a_suite_version_is_its_content(services, principal, dataset):
    name = f"s-{uuid.uuid4().hex[:8]}"
    first, created = services.eval_suites.register(_suite(dataset["name"], name), principal=principal)
    assert created and first.number == 1 and first.datasets[0].exact.endswith("@1")
    reordered = dict(reversed(list(_suite(dataset["name"], name).items())))
    again, created = services.eval_suites.register(reordered, principal=principal)
    assert not created and again == first
    margin, created = services.eval_suites.register(
        _suite(dataset["name"], name, margin=0.03), principal=principal
    )
    assert created and margin.number == 2
    # the data changes: tiny-cloze@latest now resolves to another version, so the same file is new content
    dataset["path"].write_text("two\n")
    files = [e.to_dict() for e in scan(dataset["path"]).entries]
    services.datasets.register(
        Registration(PROJECT, dataset["name"], files, kind="file", path=str(dataset["path"])),
        principal=principal,
    )
    moved, created = services.eval_suites.register(_suite(dataset["name"], name), principal=principal)
    assert created and moved.number == 3 and moved.datasets[0].exact.endswith("@2")
    assert moved.content_hash != first.content_hash
    events = services.audit.events(principal, action="eval.suite.register", limit=1000).items
    assert {first.id, margin.id, moved.id} <= {e.target_id for e in events}


def _eval_run(services, principal, dataset, tasks: int) -> str:
    version, _ = services.eval_suites.register(
        _suite(dataset["name"], f"big-{uuid.uuid4().hex[:8]}", tasks=tasks), principal=principal
    )
    run_id = f"r-{uuid.uuid4().hex[:16]}"
    spec = build_spec({"name": "eval", "project": PROJECT, "queue": "cpu", "command": "true"})
    services.runs.store.create_run(
        NewRun(
            id=run_id,
            spec=spec,
            submitter="tester",
            os_user="root",
            script="#!/bin/bash\ntrue\n",
            script_sha256="1" * 64,
            template_name="single.sbatch.j2",
            template_version="x",
            run_dir=f"/tmp/{run_id}",
            first_tag=f"gw-{run_id}-1",
        )
    )
    eval_run, _ = services.evals.store.create_eval_run(
        NewEvalRun(run_id, PROJECT, version.id, "ab" * 32, "/tmp/model", None, "tester"),
        audit=AuditEntry("tester", "eval.run", "eval_run", "", PROJECT),
    )
    return eval_run.id


def _big_results(seed: int) -> EvalResults:
    rng = np.random.default_rng(seed)
    ids = tuple(str(i) for i in range(N_SAMPLES))
    prompts = tuple(f"{i:064x}" for i in range(N_SAMPLES))
    tasks = {}
    for t in range(N_TASKS):
        acc = rng.integers(0, 2, N_SAMPLES).astype(np.float64)
        logprob = rng.normal(size=N_SAMPLES)
        samples = TaskSamples(ids, {"acc": acc, "logprob": logprob}, prompt_hashes=prompts)
        metrics = {
            "acc": MetricValue(float(acc.mean()), 0.001),
            "logprob": MetricValue(float(logprob.mean())),
        }
        tasks[f"t{t}"] = TaskResult(
            f"t{t}", "1", 0, None, N_SAMPLES, N_SAMPLES, metrics, {"acc": True}, samples
        )
    return EvalResults("native", "1", {"seed": seed}, tasks)


def test_100k_samples_x_10_tasks_come_back_bit_for_bit_and_are_written_once(services, principal, dataset):
    eval_run = _eval_run(services, principal, dataset, tasks=N_TASKS)
    results = _big_results(7)
    store = EvalResultStore(services.db)
    files = [ResultFile("native", None, "eval/native.jsonl", "cd" * 32, 123)]
    audit = AuditEntry("gateway", "eval.ingest", "eval_result", "", PROJECT, "pytest")
    result_id = store.ingest(eval_run, results, files, audit=audit)
    back = store.result(result_id, with_samples=True)
    for name, task in results.tasks.items():
        got = back.results.tasks[name]
        assert got.samples.ids == task.samples.ids and got.samples.prompt_hashes == task.samples.prompt_hashes
        for metric, column in task.samples.scores.items():
            assert np.array_equal(got.samples.scores[metric], column)  # bit for bit
        assert got.metrics == task.metrics and got.n_effective == N_SAMPLES
    assert back.files == (ResultFile("native", None, "eval/native.jsonl", "cd" * 32, 123),)
    assert services.evals.store.eval_run(eval_run).status == "ingested"
    assert store.ingest(eval_run, _big_results(8), files, audit=audit) is None  # immutable once ingested
    assert store.result(result_id, with_samples=True).results.tasks["t0"].samples.scores["acc"].sum() == (
        results.tasks["t0"].samples.scores["acc"].sum()
    )
    light = store.result(result_id)
    assert light.sample_counts == {f"t{t}": N_SAMPLES for t in range(N_TASKS)}
    assert all(t.samples is None for t in light.results.tasks.values())
