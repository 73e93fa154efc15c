"""Reading lm-eval 0.4.13 output and the native format into one results model; refusing bad input.

The fixtures under tests/fixtures/eval/ are real outputs (tests/fixtures/eval/record.py made them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gateway.core.eval import results as eval_results
from gateway.core.eval.read_lm_eval import parse_lm_eval
from gateway.core.eval.read_native import parse_native
from gateway.errors import SpecError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
TASKS = ("tiny_lm_spelling", "tiny_lm_word_order")


def _lm_files(name: str = "lm_eval") -> tuple[str, dict[str, list[str]]]:
    base = FIXTURES / name
    samples = {t: (base / f"samples_{t}.jsonl").read_text().splitlines(keepends=True) for t in TASKS}
    return (base / "results.json").read_text(), samples


def _native_lines() -> list[str]:
    return (FIXTURES / "native" / "native.jsonl").read_text().splitlines(keepends=True)


def _refused(call, *args, **kwargs) -> str:
    with pytest.raises(SpecError) as info:
        call(*args, **kwargs)
    assert info.value.what == "eval results"
    return str(info.value)


# ---------------------------------------------------------------- lm-eval


def test_lm_eval_results_and_samples():
    results_text, samples = _lm_files()
    results = parse_lm_eval(results_text, samples, source="fixture")
    assert results.harness == "lm-eval" and results.harness_version == "0.4.13"
    assert results.seeds == {"random_seed": 0, "numpy_seed": 0, "torch_seed": 0, "fewshot_seed": 0}
    assert results.config["model"] == "tiny_lm"
    assert set(results.tasks) == set(TASKS)
    raw = json.loads(results_text)
    for name in TASKS:
        task = results.tasks[name]
        assert (task.version, task.n_shot, task.n_original, task.n_effective) == ("1", 0, 12, 12)
        assert task.task_hash == raw["task_hashes"][name]
        assert task.metrics["acc"].value == raw["results"][name]["acc,none"]
        assert task.metrics["acc"].stderr == raw["results"][name]["acc_stderr,none"]
        assert task.higher_is_better == {"acc": True}
        samples_ = task.samples
        assert samples_.ids == tuple(str(i) for i in range(12))
        assert set(np.unique(samples_.scores["acc"])) <= {0.0, 1.0}
        assert samples_.scores["acc"].mean() == pytest.approx(task.metrics["acc"].value)
        first = json.loads(samples[name][0])
        assert (
            samples_.prompt_hashes[0] == first["prompt_hash"] and samples_.doc_hashes[0] == first["doc_hash"]
        )
        assert len(samples_.target_hashes) == 12


def test_lm_eval_results_without_samples_and_with_a_limit():
    results_text, _ = _lm_files()
    assert parse_lm_eval(results_text).tasks["tiny_lm_spelling"].samples is None
    limited = parse_lm_eval(*_lm_files("lm_eval_limit"))
    task = limited.tasks["tiny_lm_spelling"]
    assert (task.n_original, task.n_effective, len(task.samples)) == (12, 5, 5)
    assert limited.config["limit"] == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not lm-eval's results format: not JSON"),
        ("[1, 2]", "not lm-eval's results format: no 'results', 'configs', 'versions', 'n-samples'"),
        (json.dumps({"results": {}, "configs": {}, "versions": {}}), "no 'n-samples' object"),
        ('{"results": NaN}', "no 'results'"),
    ],
)
def test_not_lm_evals_format(text, message):
    assert message in _refused(parse_lm_eval, text)


def test_non_finite_aggregate_is_refused():
    results_text, _ = _lm_files()
    data = json.loads(results_text)
    data["results"]["tiny_lm_spelling"]["acc,none"] = float("nan")
    message = _refused(parse_lm_eval, json.dumps(data))  # json.dumps writes NaN, as lm-eval would
    assert "results.tiny_lm_spelling.acc,none" in message and "finite" in message


def test_an_edited_aggregate_is_refused_against_its_samples():
    # Issue 27, item 7: the aggregate acc edited to 0.9 while the samples' mean is 10/12 was read as
    # it stood, so the thresholds read 0.9 and the paired test the samples.
    results_text, samples = _lm_files()
    data = json.loads(results_text)
    per_sample = [json.loads(line)["acc"] for line in samples["tiny_lm_word_order"]]
    assert sum(per_sample) / len(per_sample) == pytest.approx(10 / 12)  # the recorded samples, by hand
    data["results"]["tiny_lm_word_order"]["acc,none"] = 0.9
    message = _refused(parse_lm_eval, json.dumps(data), samples)
    assert "results.tiny_lm_word_order.acc" in message
    assert "the aggregate acc is 0.9, but the mean of its 12 per-sample scores is 0.8333" in message
    # Its standard error too: lm-eval's mean_stderr is the sample standard deviation / sqrt(n).
    data = json.loads(results_text)
    data["results"]["tiny_lm_word_order"]["acc_stderr,none"] = 0.01
    message = _refused(parse_lm_eval, json.dumps(data), samples)
    assert "the standard error of acc is 0.01" in message
    # An edited sample is the same mismatch, seen from the other side.
    edited = dict(samples)
    doc = json.loads(edited["tiny_lm_word_order"][0])
    doc["acc"] = 1.0 - doc["acc"]
    edited["tiny_lm_word_order"] = [json.dumps(doc) + "\n", *samples["tiny_lm_word_order"][1:]]
    assert "do not match" in _refused(parse_lm_eval, results_text, edited)
    # Without the samples there is nothing to check the aggregate against: it is read as given.
    assert parse_lm_eval(json.dumps(data)).tasks["tiny_lm_word_order"].metrics["acc"].stderr == 0.01


def test_aggregates_of_metrics_not_averaged_are_not_checked_by_the_reader():
    # A metric_list aggregating by another function (lm-eval's f1, bleu ...) has no mean to check;
    # a task without a metric_list is checked against the suite (check_results), which says.
    results_text, samples = _lm_files()
    data = json.loads(results_text)
    data["configs"]["tiny_lm_word_order"]["metric_list"][0]["aggregation"] = "f1"
    data["results"]["tiny_lm_word_order"]["acc,none"] = 0.9
    assert parse_lm_eval(json.dumps(data), samples).tasks["tiny_lm_word_order"].metrics["acc"].value == 0.9
    del data["configs"]["tiny_lm_word_order"]["metric_list"]
    assert parse_lm_eval(json.dumps(data), samples).tasks["tiny_lm_word_order"].metrics["acc"].value == 0.9


def test_na_stderr_is_none():
    results_text, _ = _lm_files()
    data = json.loads(results_text)
    data["results"]["tiny_lm_spelling"]["acc_stderr,none"] = "N/A"
    assert parse_lm_eval(json.dumps(data)).tasks["tiny_lm_spelling"].metrics["acc"].stderr is None


def test_duplicate_sample_id_is_refused_with_its_line():
    results_text, samples = _lm_files()
    samples["tiny_lm_spelling"].insert(3, samples["tiny_lm_spelling"][1])
    message = _refused(parse_lm_eval, results_text, samples)
    assert "samples.tiny_lm_spelling line 4" in message and "duplicate sample id 1" in message


def test_samples_of_a_task_not_in_the_results_are_refused():
    results_text, samples = _lm_files()
    message = _refused(parse_lm_eval, results_text, {"hellaswag": samples["tiny_lm_spelling"]})
    assert "'hellaswag', which the results do not have" in message


def test_truncated_last_line_is_refused():
    results_text, samples = _lm_files()
    last = samples["tiny_lm_word_order"][-1]
    samples["tiny_lm_word_order"][-1] = last[: len(last) // 2]
    message = _refused(parse_lm_eval, results_text, samples)
    assert "line 12" in message and "truncated" in message


def test_a_samples_file_cut_at_a_line_end_does_not_add_up():
    results_text, samples = _lm_files()
    samples["tiny_lm_word_order"].pop()
    assert "11 samples, but the results say 12" in _refused(parse_lm_eval, results_text, samples)


def test_non_finite_sample_score_is_refused():
    results_text, samples = _lm_files()
    doc = json.loads(samples["tiny_lm_spelling"][2])
    doc["acc"] = float("nan")
    samples["tiny_lm_spelling"][2] = json.dumps(doc) + "\n"
    message = _refused(parse_lm_eval, results_text, samples)
    assert "samples.tiny_lm_spelling line 3 acc" in message and "not a finite number" in message


def test_a_line_too_long_is_refused(monkeypatch):
    monkeypatch.setattr(eval_results, "MAX_LINE_BYTES", 100)
    results_text, samples = _lm_files()
    assert "at most 100" in _refused(parse_lm_eval, results_text, samples)


def test_several_filters_and_pass_through_metrics():
    # Generation tasks log one line per document and filter; brier_score keeps a list per sample.
    results = {
        "results": {"gen": {"alias": "gen", "exact_match,strict": 0.5, "exact_match_stderr,strict": 0.5,
                            "exact_match,flex": 1.0, "exact_match_stderr,flex": 0.0}},
        "configs": {"gen": {}}, "versions": {"gen": 2.0},
        "n-samples": {"gen": {"original": 2, "effective": 2}},
    }  # fmt: skip
    lines = [
        json.dumps({"doc_id": d, "filter": f, "metrics": ["exact_match", "brier_score"], "exact_match": v,
                    "brier_score": [[0.1, 0.9]]}) + "\n"
        for f, vals in (("strict", (1.0, 0.0)), ("flex", (1.0, 1.0)))
        for d, v in enumerate(vals)
    ]  # fmt: skip
    task = parse_lm_eval(json.dumps(results), {"gen": lines}).tasks["gen"]
    assert task.version == "2.0" and set(task.metrics) == {"exact_match,strict", "exact_match,flex"}
    assert list(task.samples.scores["exact_match,strict"]) == [1.0, 0.0]
    assert list(task.samples.scores["exact_match,flex"]) == [1.0, 1.0]
    assert task.samples.ids == ("0", "1")
    assert task.samples.unscored == ("brier_score,flex", "brier_score,strict")


# ---------------------------------------------------------------- native


def test_native_format():
    results = parse_native(_native_lines(), source="native.jsonl")
    assert results.harness == "native" and results.harness_version == "1"
    assert set(results.tasks) == set(TASKS)
    for name in TASKS:
        task = results.tasks[name]
        assert (task.version, task.n_shot, task.n_original, task.n_effective) == ("1", 0, 12, 12)
        scores = task.samples.scores["gold_logprob"]
        assert task.metrics["gold_logprob"].value == pytest.approx(scores.mean())
        assert task.metrics["gold_logprob"].stderr == pytest.approx(scores.std(ddof=1) / np.sqrt(12))
        assert task.samples.ids == tuple(str(i) for i in range(12))
        assert len(task.samples.prompt_hashes) == 12


def _native_with(edit) -> list[str]:
    lines = _native_lines()
    edit(lines)
    return lines


def _sample(lines: list[str], i: int) -> dict:
    return json.loads(lines[i])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ls: ls.clear(), "empty"),
        (lambda ls: ls.pop(0), "not the native results format"),
        (lambda ls: ls.insert(3, ls[2]), "line 4: duplicate sample id '1'"),
        (
            lambda ls: ls.__setitem__(2, json.dumps({**_sample(ls, 2), "extra": 1}) + "\n"),
            "unknown field 'extra'",
        ),
        (lambda ls: ls.__setitem__(2, json.dumps({**_sample(ls, 2), "task": "mmlu"}) + "\n"), "task 'mmlu'"),
        (
            lambda ls: ls.__setitem__(
                2, ls[2].replace('"acc": 1', '"acc": NaN').replace('"acc": 0', '"acc": NaN')
            ),
            "line 3 scores.acc: is not a finite number",
        ),
        (lambda ls: ls.__setitem__(len(ls) - 1, ls[-1][:30]), "truncated"),
        (
            lambda ls: ls.__setitem__(2, json.dumps({**_sample(ls, 2), "scores": {"acc": 1}}) + "\n"),
            "other samples of 'tiny_lm_spelling' have",
        ),
        (
            lambda ls: ls.__setitem__(
                2, json.dumps({k: v for k, v in _sample(ls, 2).items() if k != "doc_hash"}) + "\n"
            ),
            "doc_hash is on some samples",
        ),
        (
            lambda ls: ls.__setitem__(2, json.dumps({**_sample(ls, 2), "id": [1]}) + "\n"),
            "a sample id is an integer",
        ),
        (
            lambda ls: ls.__setitem__(0, ls[0].replace('"n_original": 12', '"n_original": 3', 1)),
            "n_original is 3",
        ),
        (
            lambda ls: ls.__setitem__(0, json.dumps({**_sample(ls, 0), "tasks": {}}) + "\n"),
            "non-empty object",
        ),
    ],
)
def test_native_refusals(edit, message):
    assert message in _refused(parse_native, _native_with(edit))


def test_native_accepts_bytes_and_a_last_line_without_newline():
    lines = [line.encode() for line in _native_lines()]
    lines[-1] = lines[-1].rstrip(b"\n")
    assert parse_native(lines).tasks["tiny_lm_word_order"].n_effective == 12


def test_sample_caps(monkeypatch):
    from gateway.core.eval import read_lm_eval as eval_lm_eval
    from gateway.core.eval import read_native as eval_native

    monkeypatch.setattr(eval_lm_eval, "MAX_SAMPLES_PER_TASK", 5)
    assert "more than 5 samples" in _refused(parse_lm_eval, *_lm_files())
    monkeypatch.setattr(eval_native, "MAX_SAMPLES_PER_TASK", 5)
    assert "n_original is an integer from 0 to 5" in _refused(parse_native, _native_lines())


def test_parsed_scores_are_read_only():
    task = parse_native(_native_lines()).tasks["tiny_lm_spelling"]
    with pytest.raises(ValueError, match="read-only"):
        task.samples.scores["acc"][0] = 0.0
    lm_task = parse_lm_eval(*_lm_files()).tasks["tiny_lm_spelling"]
    with pytest.raises(ValueError, match="read-only"):
        lm_task.samples.scores["acc"][0] = 0.0
