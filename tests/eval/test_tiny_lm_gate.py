"""The evaluation job side for real: two tiny_lm models, lm-eval through our model class, parse, gate.

Trains a strong model (order 4, 3 epochs) and a weak one (order 2, 1 epoch)
with examples/tiny_lm/train.py, runs eval/jobs/run_eval.py on each (real
lm-eval 0.4.13 on the local JSONL tasks, offline, and the native harness),
reads the files with the gateway's parsers and gates them with the example
suite (eval/suites/tiny_lm.yaml): the weak model against the strong one fails
with a significant paired difference, a model against itself passes, and a
changed prompt template is not comparable. About 15 s on 2 cores.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.core.eval.gate import Scored, decide
from gateway.core.eval.read_lm_eval import parse_lm_eval
from gateway.core.eval.read_native import parse_native
from gateway.core.eval.suite import SuiteVersion, parse_suite

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "eval"
DATA = ROOT / "examples" / "tiny_lm" / "eval_data"
TASKS = ("tiny_lm_spelling", "tiny_lm_word_order")
MODELS = {"strong": ["--order", "4", "--epochs", "3"], "weak": ["--order", "2", "--epochs", "1"]}


def _suite(prompt: str | None = None) -> SuiteVersion:
    path = EVAL / "suites" / "tiny_lm.yaml"
    suite = parse_suite(path.read_text(), source=str(path), read=lambda rel: (EVAL / rel).read_text())
    return suite if prompt is None else suite.model_copy(update={"prompt_template": prompt})


def _digest(directory: Path) -> str:
    lines = "".join(
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in sorted(directory.iterdir())
    )
    return hashlib.sha256(lines.encode()).hexdigest()


def _run_eval(harness: str, model: Path, out: Path, prompt: Path) -> subprocess.Popen:
    argv = [sys.executable, str(EVAL / "jobs" / "run_eval.py"), "--harness", harness, "--model", str(model)]
    argv += ["--task-dir", str(EVAL / "tasks" / "tiny_lm"), "--tasks", ",".join(TASKS), "--data", str(DATA)]
    argv += ["--prompt-template", str(prompt), "--out", str(out)]
    if harness == "lm-eval":
        argv += ["--lm-eval-version", "0.4.13"]  # what the suite pins
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait(proc: subprocess.Popen, what: str) -> None:
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"{what} exited {proc.returncode}:\n{output[-3000:]}"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("tiny_lm_eval")
    train = ROOT / "examples" / "tiny_lm" / "train.py"
    procs = {
        name: subprocess.Popen(
            [sys.executable, str(train), "--out", str(tmp / name), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, args in MODELS.items()
    }
    for name, proc in procs.items():
        _wait(proc, f"training {name}")
    changed = tmp / "changed_prompt.txt"
    changed.write_text("Finish the sentence: {{context}}")
    default = EVAL / "prompts" / "tiny_lm_cloze.txt"
    runs = {
        "lm-strong": ("lm-eval", "strong", default),
        "lm-weak": ("lm-eval", "weak", default),
        "lm-strong-changed": ("lm-eval", "strong", changed),
        "native-strong": ("native", "strong", default),
        "native-weak": ("native", "weak", default),
    }
    out = {}
    for label, (harness, model, prompt) in runs.items():  # one at a time: the machine has 2 cores
        _wait(_run_eval(harness, tmp / model / "model.json", tmp / label, prompt), label)
        out[label] = tmp / label
    out["changed_prompt"] = changed
    return out


def _lm(directory: Path, suite_hash: str, label: str) -> Scored:
    manifest = json.loads((directory / "eval_manifest.json").read_text())
    samples = {task: (directory / entry["path"]).open("rb") for task, entry in manifest["samples"].items()}
    try:
        results = parse_lm_eval((directory / "results.json").read_bytes(), samples, source=str(directory))
    finally:
        for fh in samples.values():
            fh.close()
    return Scored(label, suite_hash, results)


def _hash(suite: SuiteVersion) -> str:
    return suite.content_hash({ref: _digest(DATA) for ref in suite.datasets})


def test_the_runner_leaves_lm_eval_files_and_a_manifest(outputs):
    directory = outputs["lm-strong"]
    manifest = json.loads((directory / "eval_manifest.json").read_text())
    assert manifest["harness"] == "lm-eval" and manifest["harness_version"] == "0.4.13"
    for entry in [manifest["results"], *manifest["samples"].values()]:
        data = (directory / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
    results = json.loads((directory / "results.json").read_text())
    assert set(results["n-samples"]) == set(TASKS)
    assert results["config"]["model"] == "tiny_lm"  # our model class, through lm-eval's registry
    assert set(results["task_hashes"]) == set(TASKS)


def test_weaker_model_against_the_stronger_fails_with_a_significant_paired_difference(outputs):
    suite = _suite()
    digest = _hash(suite)
    strong, weak = _lm(outputs["lm-strong"], digest, "strong"), _lm(outputs["lm-weak"], digest, "weak")
    decision = decide(suite, digest, weak, strong, approving_reviews=1)
    assert decision.verdict == "fail", decision.reasons
    by_task = {c.task: c for c in decision.comparisons}
    assert set(by_task) == set(TASKS)
    for comparison in by_task.values():
        assert comparison.test.method == "mcnemar" and comparison.test.n == 300
        assert comparison.regression and comparison.p_adjusted < 0.05
        assert comparison.test.candidate_worse > comparison.test.candidate_better
        assert comparison.test.ci_high < -0.05  # the whole interval is past the margin
    assert any("regressed" in reason for reason in decision.reasons)
    # The same pair the other way round: the strong model is no regression on the weak one.
    reverse = decide(suite, digest, strong, weak, approving_reviews=1)
    assert reverse.verdict == "pass", reverse.reasons


def test_a_model_against_itself_passes_and_needs_its_review(outputs):
    suite = _suite()
    digest = _hash(suite)
    strong = _lm(outputs["lm-strong"], digest, "strong")
    decision = decide(
        suite, digest, strong, dataclasses.replace(strong, label="strong again"), approving_reviews=1
    )
    assert decision.verdict == "pass", decision.reasons
    assert all(c.test.delta == 0 and not c.underpowered for c in decision.comparisons)
    unreviewed = decide(suite, digest, strong, strong, approving_reviews=0)
    assert unreviewed.verdict == "fail"
    assert unreviewed.reasons == ("0 approving review(s); the suite requires 1",)


def test_a_changed_prompt_template_is_not_comparable(outputs):
    suite = _suite()
    changed = _suite(prompt=outputs["changed_prompt"].read_text())
    digest, changed_digest = _hash(suite), _hash(changed)
    assert digest != changed_digest  # the template is part of the version
    strong = _lm(outputs["lm-strong"], digest, "strong")
    candidate = _lm(outputs["lm-strong-changed"], changed_digest, "strong, new prompt")
    decision = decide(changed, changed_digest, candidate, strong, approving_reviews=1)
    assert decision.verdict == "not_comparable"
    assert "scored on suite version" in decision.reasons[0]
    # Even a result filed under the old version is caught by what lm-eval recorded.
    mislabelled = dataclasses.replace(candidate, suite_hash=digest)
    caught = decide(suite, digest, mislabelled, strong, approving_reviews=1)
    assert caught.verdict == "not_comparable"
    assert any("prompt hashes differ on 300 of 300" in r for r in caught.reasons), caught.reasons
    assert any("task hashes differ" in r for r in caught.reasons)
    assert not caught.comparisons


def test_native_results_gate_a_continuous_metric_by_bootstrap(outputs):
    suite = _suite().model_copy(
        update={
            "harness": _suite().harness.model_copy(
                update={"name": "native", "version": None, "model": None, "program": "jobs/tiny_lm_native.py"}
            )
        }
    )
    suite = SuiteVersion.model_validate(
        {
            **suite.model_dump(),
            "tasks": [
                {
                    "name": t,
                    "metrics": [
                        {"name": "acc", "higher_is_better": True},
                        {"name": "gold_logprob", "higher_is_better": True},
                    ],
                }  # fmt: skip
                for t in TASKS
            ],
            "gate": {
                "regression": [
                    {
                        "metric": "gold_logprob",
                        "method": "bootstrap",
                        "margin": 0.05,
                        "iterations": 2000,
                        "seed": 1,
                    }
                ]
            },
        }
    )
    digest = _hash(suite)

    def native(label: str) -> Scored:
        with (outputs[label] / "native.jsonl").open("rb") as fh:
            return Scored(label, digest, parse_native(fh, source=label))

    strong, weak = native("native-strong"), native("native-weak")
    failed = decide(suite, digest, weak, strong)
    assert failed.verdict == "fail"
    assert all(
        c.regression and c.test.method == "bootstrap" and c.test.iterations == 2000
        for c in failed.comparisons
    )
    assert decide(suite, digest, strong, strong).verdict == "pass"
    # The native file hashes documents and prompts as lm-eval does.
    lm = _lm(outputs["lm-strong"], digest, "lm").results.tasks["tiny_lm_spelling"].samples
    nat = strong.results.tasks["tiny_lm_spelling"].samples
    assert lm.doc_hashes == nat.doc_hashes and lm.prompt_hashes == nat.prompt_hashes
