"""The eval job's run spec, its manifest, the compare table and the store's sample codec, on plain values."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from gateway.core.eval.domain import SuiteDataset, SuiteVersionRecord, parse_suite_ref
from gateway.core.eval.gate import Scored, decide
from gateway.core.eval.gate_table import compare_table
from gateway.core.eval.job import (
    OUTPUTS,
    PROMPT_ENV,
    ArtifactInput,
    check_results,
    eval_run_spec,
    parse_eval_manifest,
)
from gateway.core.eval.results import EvalResults, MetricValue, TaskResult, TaskSamples
from gateway.core.eval.suite import build_suite
from gateway.errors import SpecError
from gateway.store.eval.codec import decode_scores, decode_texts, encode_scores, encode_texts

SHA = "ab" * 32


def _version(
    harness: dict | None = None, prompt: str = "Q: {{context}} 'it''s' $(rm -rf /)"
) -> SuiteVersionRecord:
    suite = build_suite(
        {
            "project": "demo",
            "name": "cloze",
            "datasets": ["tiny-cloze@latest"],
            "prompt_template": prompt,
            "harness": harness
            or {"name": "lm-eval", "version": "0.4.13", "model": "tiny_lm", "task_dir": "tasks/tiny_lm"},
            "tasks": [
                {"name": t, "metrics": [{"name": "acc", "higher_is_better": True}]} for t in ("a", "b")
            ],
            "queue": "cpu",
            "resources": {"mem_gb": 1, "walltime_min": 10},
        }
    )
    dataset = SuiteDataset(0, "tiny-cloze@latest", "dv-1", "demo", "tiny-cloze", 3, "cd" * 32)
    return SuiteVersionRecord("esv-1", "es-1", 2, "ef" * 32, suite, (dataset,), "alice", datetime.now(UTC))


def test_the_eval_spec_is_an_ordinary_run_with_the_artifact_and_the_exact_dataset_version():
    artifact = ArtifactInput("/runs/r-1/outputs/my model's.json", SHA)
    spec = eval_run_spec(
        _version(), artifact, queue="cpu", python="/opt/venv/bin/python", eval_dir="/srv/eval"
    )
    assert spec.project == "demo" and spec.queue == "cpu" and spec.resources.mem_gb == 1
    assert spec.datasets[0] == artifact.path and spec.dataset_digests == {artifact.path: SHA}
    (use,) = spec.dataset_uses()
    assert use.ref == "demo/tiny-cloze@3" and use.verify == "digest"  # exactly the version the suite pinned
    assert spec.outputs == OUTPUTS and spec.workdir == "/srv/eval"
    assert spec.env[PROMPT_ENV] == "Q: {{context}} 'it''s' $(rm -rf /)"  # the text travels as a variable
    first, second = spec.command.splitlines()
    assert "$(rm" not in spec.command  # the prompt is never in the command line
    words = shlex.split(second)
    assert words[:2] == ["/opt/venv/bin/python", "/srv/eval/jobs/run_eval.py"]
    assert "/runs/r-1/outputs/my model's.json" in words  # quoted as one word
    assert words[words.index("--tasks") + 1] == "a,b"
    assert words[words.index("--lm-eval-version") + 1] == "0.4.13"
    assert words[words.index("--data") + 1] == "$GW_DATASET_TINY_CLOZE"
    assert first.startswith(f'printf \'%s\' "${PROMPT_ENV}" > "$GW_RUN_DIR/prompt_template.txt"')


def test_a_native_suite_runs_its_program_and_bad_values_are_refused():
    native = _version({"name": "native", "task_dir": "tasks/t", "program": "jobs/score.py"})
    spec = eval_run_spec(native, ArtifactInput("/m.json", SHA), queue="cpu", python="python3", eval_dir="/e")
    assert "--program /e/jobs/score.py" in spec.command and "--lm-eval-version" not in spec.command
    with pytest.raises(SpecError, match="eval_python"):
        eval_run_spec(
            native, ArtifactInput("/m.json", SHA), queue="cpu", python="py; rm -rf /", eval_dir="/e"
        )
    with pytest.raises(SpecError, match="control character"):
        eval_run_spec(native, ArtifactInput("/m\n.json", SHA), queue="cpu", python="python3", eval_dir="/e")


def _manifest(**over) -> str:
    entry = {"path": "results.json", "sha256": SHA, "bytes": 10}
    body = {"harness": "lm-eval", "harness_version": "0.4.13", "results": entry, "samples": {}}
    body.update(over)
    return json.dumps(body)


def test_the_manifest_is_read_strictly():
    sample = {"path": "samples_a.jsonl", "sha256": "cd" * 32, "bytes": 5}
    manifest = parse_eval_manifest(_manifest(samples={"a": sample}))
    assert [(r, t, e.path) for r, t, e in manifest.entries()] == [
        ("results", None, "results.json"),
        ("samples", "a", "samples_a.jsonl"),
    ]
    bad = [
        ("not json", "not JSON"),
        (_manifest(harness="other"), "harness lm-eval or native"),
        (_manifest(results={"path": "../x", "sha256": SHA, "bytes": 1}), "a file name"),
        (_manifest(results={"path": "r.json", "sha256": "XYZ", "bytes": 1}), "sha256"),
        (_manifest(results={"path": "r.json", "sha256": SHA, "bytes": -1}), "bytes"),
        (_manifest(results={"path": "r.json", "sha256": SHA}), "{path, sha256, bytes}"),
        (
            _manifest(samples={"a": {"path": "results.json", "sha256": SHA, "bytes": 1}}),
            "names one file twice",
        ),
    ]
    for text, words in bad:
        with pytest.raises(SpecError, match="invalid eval results") as refused:
            parse_eval_manifest(text)
        assert words in str(refused.value), (text, refused.value)


def _results(accs: dict[str, list[int]], harness: str = "lm-eval") -> EvalResults:
    tasks = {}
    for name, acc in accs.items():
        column = np.asarray(acc, dtype=np.float64)
        ids = tuple(str(i) for i in range(len(acc)))
        tasks[name] = TaskResult(
            name, "1", 0, None, len(acc), len(acc), {"acc": MetricValue(float(column.mean()), 0.01)},
            {"acc": True}, TaskSamples(ids, {"acc": column}),
        )  # fmt: skip
    return EvalResults(harness, "0.4.13", {"seed": 0}, tasks)


def test_results_of_another_suite_are_refused():
    suite = _version().suite
    check_results(_results({"a": [1], "b": [1]}), suite)
    with pytest.raises(SpecError, match="which the suite does not have"):
        check_results(_results({"a": [1], "zzz": [1]}), suite)
    with pytest.raises(SpecError, match="native results; the suite's harness is lm-eval"):
        check_results(_results({"a": [1]}, harness="native"), suite)


def test_an_aggregate_the_suite_averages_must_be_its_samples_mean():
    # The suite says acc aggregates by mean: an lm-eval task without a metric_list (whose reader
    # cannot tell) is checked here, against the suite.
    suite = _version().suite
    good = _results({"a": [1, 0, 1, 1], "b": [1, 1]})
    task = good.tasks["a"]
    own = MetricValue(0.75, float(np.std([1, 0, 1, 1], ddof=1) / 2))
    fine = replace(good, tasks={**good.tasks, "a": replace(task, metrics={"acc": own})})
    check_results(replace(fine, tasks={"a": fine.tasks["a"]}), suite)
    edited = replace(fine, tasks={"a": replace(task, metrics={"acc": MetricValue(0.9, own.stderr)})})
    with pytest.raises(SpecError, match="tasks.a.acc") as refused:
        check_results(edited, suite)
    assert "the aggregate acc is 0.9, but the mean of its 4 per-sample scores is 0.75" in str(refused.value)


def test_the_compare_table_reads_each_row():
    version = _version()
    suite = version.suite.model_copy(
        update={"gate": build_suite(_gate_suite()).gate}
    )  # a paired rule on acc, margin 0.05
    good = [1] * 180 + [0] * 20
    worse = [0] * 60 + [1] * 120 + [0] * 20
    a, b = _results({"a": worse, "b": good}), _results({"a": good, "b": good})
    decision = decide(suite, "h", Scored("A", "h", a), Scored("B", "h", b))
    table = compare_table(suite, decision, a, b)
    rows = {r["task"]: r for r in table["rows"]}
    assert rows["a"]["verdict"] == "regressed" and rows["a"]["delta"] == pytest.approx(-0.3)
    assert rows["a"]["ci_low"] < rows["a"]["delta"] < rows["a"]["ci_high"] < 0
    assert rows["b"]["verdict"] == "no significant change" and rows["b"]["delta"] == 0
    other = decide(suite, "h", Scored("A", "other", a), Scored("B", "h", b))
    assert {r["verdict"] for r in compare_table(suite, other, a, b)["rows"]} == {"not comparable"}


def _gate_suite() -> dict:
    return {
        "project": "demo",
        "name": "g",
        "datasets": ["d@1"],
        "prompt_template": "x",
        "harness": {"name": "lm-eval", "version": "0.4.13", "model": "m", "task_dir": "t"},
        "tasks": [{"name": t, "metrics": [{"name": "acc", "higher_is_better": True}]} for t in ("a", "b")],
        "gate": {"regression": [{"metric": "acc", "method": "mcnemar", "margin": 0.05}]},
    }


def test_suite_references():
    assert parse_suite_ref("demo/cloze@3").number == 3
    assert parse_suite_ref("cloze@latest").project is None and parse_suite_ref("cloze@v2").number == 2
    for bad in ("cloze", "cloze@0", "demo/cloze@x", "a/b/c@1", "cloze@1; rm"):
        with pytest.raises(ValueError):
            parse_suite_ref(bad)


def test_the_sample_codec_round_trips_compactly():
    ids = tuple(f"doc-{i}" for i in range(100_000)) + ("ünïcode ✓", 'with "quotes" and \\')
    assert decode_texts(encode_texts(ids)) == ids
    assert encode_texts(None) is None and decode_texts(None) is None
    scores = np.random.default_rng(0).integers(0, 2, len(ids)).astype(np.float64)
    blob = encode_scores(scores)
    assert len(blob) < scores.nbytes / 5  # 0/1 scores shrink
    back = decode_scores(blob)
    assert np.array_equal(back, scores) and back.dtype == np.float64 and not back.flags.writeable
    continuous = np.random.default_rng(1).normal(size=1000)
    assert np.array_equal(decode_scores(encode_scores(continuous)), continuous)


def test_an_eval_job_runs_in_the_suites_environment_else_the_sites_default_else_the_eval_python():
    artifact = ArtifactInput("/runs/r-1/outputs/model.json", SHA)
    plain = eval_run_spec(_version(), artifact, queue="cpu", python="/opt/venv/bin/python", eval_dir="/e")
    assert (
        plain.environment is None and shlex.split(plain.command.splitlines()[1])[0] == "/opt/venv/bin/python"
    )
    default = eval_run_spec(
        _version(),
        artifact,
        queue="cpu",
        python="/opt/venv/bin/python",
        eval_dir="/e",
        environment="site/lm@2",
    )
    assert default.environment == "site/lm@2"
    assert shlex.split(default.command.splitlines()[1])[:2] == ["python3", "/e/jobs/run_eval.py"]
    own = replace(_version(), suite=_version().suite.model_copy(update={"environment": "demo/lm-eval@3"}))
    mine = eval_run_spec(own, artifact, queue="cpu", python="python3", eval_dir="/e", environment="site/lm@2")
    assert mine.environment == "demo/lm-eval@3"


def test_a_suites_environment_is_one_exact_version_and_a_suite_without_one_hashes_as_before():
    data = _version().suite.model_dump(mode="json")
    digests = {"tiny-cloze@latest": "cd" * 32}
    before = build_suite(data).content_hash(digests)
    assert build_suite(data | {"environment": None}).content_hash(digests) == before
    assert build_suite(data | {"environment": "demo/lm-eval@3"}).content_hash(digests) != before
    for bad in ("demo/lm-eval@latest", "lm-eval@3", "demo/lm-eval", "demo/lm eval@3"):
        with pytest.raises(SpecError, match="environment"):
            build_suite(data | {"environment": bad})


def test_an_eval_job_waiting_for_its_environments_build_depends_on_it_and_dies_with_it():
    artifact = ArtifactInput("/runs/r-1/outputs/model.json", SHA)
    waits = eval_run_spec(
        _version(),
        artifact,
        queue="cpu",
        python="python3",
        eval_dir="/e",
        environment="site/lm-eval@1",
        dependency="afterok:4242",
    )
    assert waits.dependency == "afterok:4242" and waits.slurm_options == {"kill-on-invalid-dep": "yes"}
    ready = eval_run_spec(_version(), artifact, queue="cpu", python="python3", eval_dir="/e")
    assert ready.dependency is None and ready.slurm_options == {}
