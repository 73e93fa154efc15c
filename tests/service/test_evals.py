"""Evaluation end to end on the real cluster, on SQLite and PostgreSQL: suites, eval runs, ingest, gates.

The world (``tests/service/eval_world.py``, built once per backend): two tiny_lm models trained as
gateway runs, the same suite version run on both through real lm-eval in Slurm jobs, a changed-prompt
version, and two eval runs whose harness left bad files. Then: the weaker model against the stronger
fails with a significant paired difference, a model against itself passes once reviewed, the changed
prompt is not comparable; bad files, a dataset the project cannot read and a gate across suites are
refused with nothing stored; reviews are append-only, counted, and only leads and reviewers give them.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text

from gateway.core.eval.domain import SampleRef
from gateway.errors import Forbidden, NotFound, SpecError
from gateway.services.eval.runs import ArtifactChoice
from tests.service.conftest import PROJECT
from tests.service.eval_world import TASKS, cycle, settle, suite_data

pytestmark = pytest.mark.slurm


def count(services, table: str, where: str, **params) -> int:
    with services.db.engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM {table} WHERE {where}"), params).scalar_one()


# -- the runs ---------------------------------------------------------------------------------


def test_eval_runs_are_ordinary_runs_linked_both_ways(services, eval_world):
    world = eval_world
    strong = world.evals["strong"]
    assert strong.status == "ingested", strong.note
    assert world.evals["weak"].status == "ingested", world.evals["weak"].note
    run = services.runs.store.get_run(strong.run_id)
    assert run.state.value == "succeeded" and run.queue == "cpu" and run.project == PROJECT
    assert run.latest.job_id and "eval" in run.tags  # an ordinary Slurm job, on the suite's queue
    inputs = services.lineage.store.inputs(run.id)
    assert [i.version.name for i in inputs] == [world.dataset]  # the suite's dataset version, exactly
    assert run.spec.dataset_digests == {strong.artifact_path: world.artifacts["strong"]}  # checked in the job
    assert strong.artifact_run_id == world.training["strong"]
    assert strong.suite_version_id == world.suites["v1"].id
    on_artifact = services.evals.list(
        principal=services.access.principal("tester"), artifact_sha256=strong.artifact_sha256
    )
    assert {e.id for e in on_artifact} >= {strong.id, world.evals["strong-v2"].id}
    result = services.gates.result(world.results["strong"], principal=services.access.principal("watcher"))
    assert result.results.harness == "lm-eval" and result.results.harness_version == "0.4.13"
    assert set(result.results.tasks) == set(TASKS)
    for task in result.results.tasks.values():
        assert task.n_original == task.n_effective == 300 and result.sample_counts[task.name] == 300
        assert task.metrics["acc"].stderr is not None
    roles = sorted(f.role for f in result.files)
    assert roles == ["manifest", "prompt", "results", "samples", "samples"]
    artifacts = {a.path: a for a in services.lineage.store.artifacts(run.id)}
    for f in result.files:  # the source files are the run's artifacts, with the same sha256
        assert artifacts[f.path].sha256 == f.sha256 and artifacts[f.path].id == f.artifact_id


def test_weaker_against_stronger_fails_with_a_significant_paired_difference(services, principal, eval_world):
    world = eval_world
    gate = services.gates.gate(
        world.results["weak"], principal=principal, baseline_id=world.results["strong"]
    )
    assert gate.verdict == "fail" and gate.baseline_id == world.results["strong"]
    comparisons = {c["task"]: c for c in gate.decision["comparisons"]}
    assert set(comparisons) == set(TASKS)
    for c in comparisons.values():
        assert c["regression"] and c["p_adjusted"] < 0.05 and c["test"]["method"] == "mcnemar"
        assert c["test"]["n"] == 300 and c["test"]["ci_high"] < -0.05
    assert any("regressed" in r for r in gate.decision["reasons"])
    stored = services.gates.gate_record(gate.id, principal=principal)
    assert stored == gate
    events = services.audit.events(principal, target=gate.id).items
    assert [e.action for e in events] == ["eval.gate"] and events[0].after["verdict"] == "fail"


def test_a_model_against_itself_passes_once_reviewed(services, principal, eval_world):
    world = eval_world
    strong = world.results["strong"]
    rita = services.access.principal("rita", source="pytest")
    # The eval world is shared by the session: rita, its one reviewer, may have approved this result in
    # another file (test_cli_evals.py); her newest review is the one that counts, so this one resets it.
    services.reviews.record(strong, verdict="needs-work", principal=rita, notes="not read yet")
    unreviewed = services.gates.gate(strong, principal=principal, baseline_id=strong)
    assert unreviewed.verdict == "fail"
    assert unreviewed.decision["reasons"] == ["0 approving review(s); the suite requires 1"]
    review = services.reviews.record(
        strong, verdict="approve", principal=rita, notes="spot-checked ten endings"
    )
    gate = services.gates.gate(strong, principal=principal, baseline_id=strong)
    assert gate.verdict == "pass", gate.decision["reasons"]
    assert gate.review_ids == (review.id,)
    assert all(c["test"]["delta"] == 0 and not c["underpowered"] for c in gate.decision["comparisons"])


def test_a_changed_prompt_template_is_not_comparable(services, principal, eval_world):
    world = eval_world
    assert world.suites["v2"].number == world.suites["v1"].number + 1
    assert world.suites["v2"].content_hash != world.suites["v1"].content_hash
    changed = world.results["strong-v2"]
    gate = services.gates.gate(changed, principal=principal, baseline_id=world.results["strong"])
    assert gate.verdict == "not_comparable"
    assert any("was scored on suite version" in r for r in gate.decision["reasons"]), gate.decision["reasons"]
    table = services.gates.compare(changed, world.results["strong"], principal=principal)
    assert not table["comparable"] and {r["verdict"] for r in table["rows"]} == {"not comparable"}


def test_compare_lays_the_paired_statistics_out_per_task(services, principal, eval_world):
    world = eval_world
    table = services.gates.compare(world.results["weak"], world.results["strong"], principal=principal)
    assert table["comparable"] and [r["task"] for r in table["rows"]] == list(TASKS)
    for row in table["rows"]:
        assert row["verdict"] == "regressed" and row["a"] < row["b"]
        assert row["ci_low"] <= row["delta"] <= row["ci_high"] < 0 and row["p_value"] < 0.05
    before = count(services, "gate_decisions", "candidate_id = :c", c=world.results["weak"])
    services.gates.compare(world.results["weak"], world.results["strong"], principal=principal)
    assert count(services, "gate_decisions", "candidate_id = :c", c=world.results["weak"]) == before


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "words"),
    [
        ("bad-format", "not lm-eval's results format"),
        ("bad-duplicate", "duplicate sample id"),
    ],
)
def test_bad_results_files_are_refused_and_nothing_is_stored(services, eval_world, label, words):
    eval_run = eval_world.evals[label]
    assert eval_run.status == "refused" and words in eval_run.note, eval_run.note
    assert eval_run.result_id is None
    assert count(services, "eval_results", "eval_run_id = :e", e=eval_run.id) == 0
    run = services.runs.store.get_run(eval_run.run_id)
    assert run.state.value == "succeeded"  # the job ran; its files are what is wrong
    events = services.audit.events(services.access.principal("admin"), target=eval_run.id).items
    assert [e.action for e in events] == ["eval.run", "eval.refused"]


def test_a_suite_naming_a_dataset_the_project_cannot_read_is_refused(services, principal, eval_world):
    outsider = services.access.principal("outsider")
    before = count(services, "eval_suite_versions", "1 = 1")
    # project other's lead names project test's dataset: other cannot read it
    data = suite_data(eval_world.dataset, "sneaky") | {"project": "other"}
    data["datasets"] = [f"{PROJECT}/{eval_world.dataset}@latest"]
    with pytest.raises(SpecError) as refused:
        services.eval_suites.register(data, principal=outsider)
    (issue,) = refused.value.issues
    assert issue.path == "datasets.0" and "project other cannot read this dataset" in issue.message
    missing = suite_data("no-such-data", "ghost")
    with pytest.raises(SpecError, match="cannot read this dataset"):
        services.eval_suites.register(missing, principal=principal)
    assert count(services, "eval_suite_versions", "1 = 1") == before
    assert count(services, "eval_suites", "name IN ('sneaky', 'ghost')") == 0


def test_a_gate_between_different_suites_is_refused(services, principal, eval_world):
    world = eval_world
    before = count(services, "gate_decisions", "1 = 1")
    other = _native_result(services, principal, world)
    with pytest.raises(SpecError, match="a gate compares results of one suite"):
        services.gates.gate(world.results["strong"], principal=principal, baseline_id=other)
    with pytest.raises(SpecError, match="a gate compares results of one suite"):
        services.gates.compare(world.results["strong"], other, principal=principal)
    assert count(services, "gate_decisions", "1 = 1") == before


def _native_result(services, principal, world) -> str:
    """A good native-harness result (one extra eval job, the native harness takes a second)."""
    started = services.evals.start(
        world.suites["native"].ref, ArtifactChoice(sha256=world.artifacts["strong"]), principal=principal
    )
    settle(services, [started.run.id], cycles=True)
    for _ in range(20):
        cycle(services)
        found = services.evals.store.eval_run(started.eval_run.id)
        if found.status != "pending":
            break
    assert found.status == "ingested", found.note
    return found.result_id


# -- reviews ----------------------------------------------------------------------------------


def test_reviews_are_append_only_and_need_a_lead_or_reviewer(services, eval_world):
    world = eval_world
    weak = world.results["weak"]
    access = services.access
    with pytest.raises(Forbidden, match="or the reviewer role"):
        services.reviews.record(weak, verdict="approve", principal=access.principal("mia"))
    with pytest.raises(Forbidden):
        services.reviews.record(weak, verdict="approve", principal=access.principal("watcher"))
    with pytest.raises(NotFound):
        services.reviews.record(weak, verdict="approve", principal=access.principal("outsider"))
    rita = access.principal("rita", source="pytest")
    first = services.reviews.record(
        weak,
        verdict="needs-work",
        principal=rita,
        notes="endings look off",
        samples=[(TASKS[0], "0"), (TASKS[0], "1")],
        labels={f"{TASKS[1]}/5": "wrong order"},
    )
    assert first.samples == (SampleRef(TASKS[0], "0"), SampleRef(TASKS[0], "1"), SampleRef(TASKS[1], "5"))
    second = services.reviews.record(weak, verdict="reject", principal=rita)
    lead = services.reviews.record(weak, verdict="approve", principal=access.principal("tester"))
    # other test files of this process may have reviewed the shared world's weak result before: this
    # test's three reviews, in the order made, the first superseded by rita's second
    ours = {first.id, second.id, lead.id}
    listed = [r for r in services.reviews.list(weak, principal=access.principal("watcher")) if r.id in ours]
    assert [r.id for r in listed] == [first.id, second.id, lead.id]
    assert listed[0].superseded_by == second.id and second.supersedes == first.id and second.current
    result = services.gates.result(weak, principal=rita)
    approving = {r.id for r in services.reviews.approving(result)}
    assert lead.id in approving and not approving & {first.id, second.id}  # rita's current review rejects
    events = services.audit.events(access.principal("admin"), action="eval.review", limit=1000).items
    assert {first.id, second.id, lead.id} <= {e.target_id for e in events}


def test_review_fields_are_checked(services, eval_world):
    world = eval_world
    rita = services.access.principal("rita")
    cases = [
        ({"verdict": "maybe"}, "verdict"),
        ({"verdict": "approve", "samples": [("no_such_task", "0")]}, "samples"),
        ({"verdict": "approve", "samples": [(TASKS[0], "99999")]}, "samples"),
        ({"verdict": "approve", "labels": {"no-slash": "x"}}, "labels.no-slash"),
    ]
    for fields, where in cases:
        with pytest.raises(SpecError) as refused:
            services.reviews.record(world.results["strong"], principal=rita, **fields)
        assert refused.value.issues[0].path == where, refused.value
    sha = world.artifacts["strong"]
    with pytest.raises(SpecError, match="samples belong to an eval result"):
        services.reviews.record(sha, verdict="approve", principal=rita, samples=[(TASKS[0], "0")])
    on_artifact = services.reviews.record(
        sha, verdict="approve", principal=rita, notes="the checkpoint is fine"
    )
    assert on_artifact.target_type == "artifact" and on_artifact.target_id == sha
