"""Suite versions: the example parses, the content hash decides sameness, bad definitions name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.core.eval.suite import build_suite, parse_suite
from gateway.errors import SpecError

EVAL = Path(__file__).resolve().parents[2] / "eval"
DIGESTS = {"tiny-cloze@latest": "ab" * 32}


def _example_data() -> dict:
    data = yaml.safe_load((EVAL / "suites" / "tiny_lm.yaml").read_text())
    data.pop("prompt_template_file")
    data["prompt_template"] = "{{context}}"
    return data


def _with(**changes) -> dict:
    data = _example_data()
    data.update(changes)
    return data


def _issues(data) -> str:
    with pytest.raises(SpecError) as info:
        build_suite(data, source="suite.yaml")
    assert info.value.what == "eval suite"
    return str(info.value)


def test_the_example_suite():
    path = EVAL / "suites" / "tiny_lm.yaml"
    suite = parse_suite(path.read_text(), source=str(path), read=lambda rel: (EVAL / rel).read_text())
    assert (suite.project, suite.name) == ("demo", "tiny-lm-cloze")
    assert suite.prompt_template == (EVAL / "prompts" / "tiny_lm_cloze.txt").read_text()
    assert suite.harness.name == "lm-eval" and suite.harness.version == "0.4.13"
    assert [t.name for t in suite.tasks] == ["tiny_lm_spelling", "tiny_lm_word_order"]
    assert suite.gate.regression[0].method == "mcnemar" and suite.gate.reviews_required == 1
    assert suite.rule_tasks(["*"], "acc", "x") == ["tiny_lm_spelling", "tiny_lm_word_order"]
    threshold = suite.gate.thresholds[0]
    assert (threshold.metric, threshold.op, threshold.value) == ("acc", ">=", 0.5)
    # The task dir and the prompt the suite names are there.
    assert (EVAL / suite.harness.task_dir / "spelling.yaml").is_file()


def test_content_hash_is_the_content():
    suite = build_suite(_example_data())
    same = build_suite(json.loads(json.dumps(_example_data(), sort_keys=True)))  # other key order, JSON
    assert suite.content_hash(DIGESTS) == same.content_hash(DIGESTS)
    assert len(suite.content_hash(DIGESTS)) == 64
    changed = [
        build_suite(_with(prompt_template="Sentence: {{context}}")).content_hash(DIGESTS),
        suite.content_hash({"tiny-cloze@latest": "cd" * 32}),  # latest now names another version
        build_suite(_with(description="other words")).content_hash(DIGESTS),
    ]
    data = _example_data()
    data["gate"]["regression"][0]["margin"] = 0.02
    changed.append(build_suite(data).content_hash(DIGESTS))
    assert len({suite.content_hash(DIGESTS), *changed}) == 5
    with pytest.raises(ValueError, match="no resolved digest for dataset"):
        suite.content_hash({})


def test_unknown_field_is_refused_with_its_path():
    data = _example_data()
    data["tasks"][0]["metrics"][0]["colour"] = "red"
    message = _issues(data)
    assert (
        "tasks.0.metrics.0.colour: unknown field; valid fields here: name, higher_is_better, aggregation"
        in message
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"datasets": ["tiny cloze"]}, "dataset 'tiny cloze' is not valid"),
        ({"datasets": ["a@1", "a@2"]}, "listed twice"),
        ({"datasets": []}, "datasets"),
        ({"prompt_template": "  "}, "prompt_template: is empty"),
        ({"project": "de mo"}, "project: not a valid name"),
        ({"harness": {"name": "lm-eval", "task_dir": "tasks/x", "model": "tiny_lm"}}, "pins its version"),
        ({"harness": {"name": "native", "task_dir": "tasks/x"}}, "names its program"),
        (
            {"harness": {"name": "lm-eval", "version": "0.4.13", "model": "m", "task_dir": "../etc"}},
            "stay below eval/",
        ),
        ({"harness": {"name": "hf", "task_dir": "t"}}, "harness.name"),
        (
            {"gate": {"thresholds": [{"task": "nope", "rule": "acc >= 0.5"}]}},
            "task 'nope' is not in the suite",
        ),
        ({"gate": {"thresholds": [{"rule": "f1 >= 0.5"}]}}, "no task of the suite has metric 'f1'"),
        ({"gate": {"thresholds": [{"rule": "acc => 0.5"}]}}, "threshold 'acc => 0.5' is not valid"),
        ({"gate": {"thresholds": [{"rule": "acc >= nan"}]}}, "is not valid"),
        ({"gate": {"regression": [{"metric": "acc", "method": "ttest"}]}}, "gate.regression.0.method"),
        (
            {"gate": {"regression": [{"metric": "acc", "method": "mcnemar", "alpha": 0.9}]}},
            "gate.regression.0.alpha",
        ),
        ({"gate": {"regression": [{"metric": "acc", "method": "mcnemar"}] * 2}}, "already gated by"),
        ({"gate": {"reviews_required": -1}}, "gate.reviews_required"),
        ({"resources": {"mem_gb": -1}}, "resources.mem_gb"),
    ],
)
def test_bad_definitions_name_what_is_wrong(change, message):
    assert message in _issues(_with(**change))


def test_paired_rules_need_mean_aggregation():
    data = _example_data()
    data["tasks"][0]["metrics"][0]["aggregation"] = "f1"
    assert "aggregates by 'f1'; paired tests need 'mean'" in _issues(data)


def test_duplicate_task_and_metric():
    data = _example_data()
    data["tasks"].append(data["tasks"][0])
    assert "task 'tiny_lm_spelling' is listed twice" in _issues(data)
    data = _example_data()
    data["tasks"][0]["metrics"].append(data["tasks"][0]["metrics"][0])
    assert "metric 'acc' is listed twice" in _issues(data)


def test_prompt_template_file():
    text = yaml.safe_dump({**_example_data(), "prompt_template": None}).replace("prompt_template: null\n", "")
    text += "prompt_template_file: prompts/p.txt\n"
    assert parse_suite(text, read=lambda rel: f"read {rel}").prompt_template == "read prompts/p.txt"

    def missing(rel: str) -> str:
        raise FileNotFoundError(rel)

    with pytest.raises(SpecError, match="prompt_template_file: cannot read it"):
        parse_suite(text, source="s.yaml", read=missing)
    with pytest.raises(SpecError, match="no '..'"):
        parse_suite(text.replace("prompts/p.txt", "../../etc/passwd"), read=lambda rel: "x")
    with pytest.raises(SpecError, match="not both"):
        parse_suite(text + "prompt_template: inline\n", read=lambda rel: "x")


def test_not_a_mapping_and_not_yaml():
    with pytest.raises(SpecError, match="a suite must be a mapping"):
        parse_suite("- a\n- b\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        parse_suite("a: [1,\n")
