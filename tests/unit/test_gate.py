"""The gate decision on plain values: verdicts, the numbers behind them, and every refusal to compare."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from gateway.core.eval.gate import Scored, decide
from gateway.core.eval.results import EvalResults, MetricValue, TaskResult, TaskSamples
from gateway.core.eval.suite import build_suite

SUITE_HASH = "5" * 64
N = 400


def _suite(regression: list[dict] | None = None, **gate) -> object:
    return build_suite(
        {
            "project": "demo",
            "name": "s",
            "datasets": ["d@1"],
            "prompt_template": "{{q}}",
            "harness": {"name": "native", "task_dir": "tasks/x", "program": "jobs/p.py"},
            "tasks": [
                {
                    "name": t,
                    "metrics": [
                        {"name": "acc", "higher_is_better": True},
                        {"name": "loss", "higher_is_better": False},
                    ],
                }  # fmt: skip
                for t in ("a", "b")
            ],
            "gate": {
                "regression": regression
                if regression is not None
                else [{"metric": "acc", "method": "mcnemar", "margin": 0.02}],
                **gate,
            },
        }
    )


def _task(name: str, acc: np.ndarray, loss: np.ndarray | None = None, **over) -> TaskResult:
    loss = np.zeros(len(acc)) if loss is None else loss
    ids = over.pop("ids", tuple(str(i) for i in range(len(acc))))
    samples = TaskSamples(
        ids=ids,
        scores={"acc": acc, "loss": loss},
        prompt_hashes=over.pop("prompt_hashes", tuple(f"p{i}" for i in ids)),
    )
    fields = {
        "name": name,
        "version": "1",
        "n_shot": 0,
        "task_hash": None,
        "n_original": len(acc),
        "n_effective": len(acc),
        "metrics": {"acc": MetricValue(float(acc.mean())), "loss": MetricValue(float(loss.mean()))},
        "samples": samples,
    }
    fields.update(over)
    return TaskResult(**fields)


def _scored(
    label: str, a: TaskResult, b: TaskResult, suite_hash: str = SUITE_HASH, version: str = "1"
) -> Scored:
    return Scored(label, suite_hash, EvalResults("native", version, {"seed": 0}, {"a": a, "b": b}))


def _binary(p: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(N) < p).astype(float)


BASE = _binary(0.8, 1)
WORSE = np.where(np.random.default_rng(2).random(N) < 0.25, 0.0, BASE)  # loses about a fifth of its hits


def _pair(cand_a=BASE, base_a=BASE, cand_b=BASE, base_b=BASE):
    return _scored("cand", _task("a", cand_a), _task("b", cand_b)), _scored(
        "base", _task("a", base_a), _task("b", base_b)
    )


def test_same_results_pass_with_every_number_recorded():
    cand, base = _pair()
    decision = decide(_suite(), SUITE_HASH, cand, base)
    assert decision.verdict == "pass" and decision.reasons == ()
    assert (decision.candidate, decision.baseline, decision.suite) == ("cand", "base", "demo/s")
    assert [c.task for c in decision.comparisons] == ["a", "b"]
    comparison = decision.comparisons[0]
    assert comparison.test.delta == 0 and comparison.test.p_value == 1.0 and not comparison.underpowered
    assert comparison.test.mde < 0.02  # 400 samples can see a drop of 2 points
    json.dumps(decision.to_dict(), allow_nan=False)  # storable as it is


def test_a_significant_drop_beyond_the_margin_fails():
    cand, base = _pair(cand_a=WORSE)
    decision = decide(_suite(), SUITE_HASH, cand, base)
    assert decision.verdict == "fail"
    a, b = decision.comparisons
    assert a.regression and not b.regression and a.worse_by == pytest.approx(BASE.mean() - WORSE.mean())
    assert a.p_adjusted < 0.05 and a.test.candidate_worse > 0 and a.test.candidate_better == 0
    assert len(decision.reasons) == 1 and decision.reasons[0].startswith("a: regressed: acc")


def test_benjamini_hochberg_adjusts_across_the_rules_tasks():
    cand, base = _pair(cand_a=WORSE, cand_b=WORSE)
    with_bh = decide(_suite(), SUITE_HASH, cand, base).comparisons
    raw = decide(
        _suite([{"metric": "acc", "method": "mcnemar", "margin": 0.02, "correction": "none"}]),
        SUITE_HASH,
        cand,
        base,
    ).comparisons
    for adjusted, plain in zip(with_bh, raw, strict=True):
        assert plain.p_adjusted == plain.test.p_value
        assert adjusted.p_adjusted >= adjusted.test.p_value
    assert with_bh[0].correction == "bh" and raw[0].correction == "none"


def test_a_drop_within_the_margin_passes():
    small = BASE.copy()
    small[np.flatnonzero(BASE == 1)[:40]] = 0  # 10 points worse, every one a loss: significant
    cand, base = _pair(cand_a=small)
    decision = decide(
        _suite([{"metric": "acc", "method": "mcnemar", "margin": 0.15}]), SUITE_HASH, cand, base
    )
    a = decision.comparisons[0]
    assert decision.verdict == "pass" and a.significant and not a.regression
    assert a.reason.startswith("worse within the margin")


def test_not_significant_is_not_no_regression():
    # 30 samples: a 2-point margin is far below what they can detect.
    small = _binary(0.7, 3)[:30]
    cand = _scored("cand", _task("a", small), _task("b", small))
    base = _scored("base", _task("a", small), _task("b", small))
    strict = decide(_suite(), SUITE_HASH, cand, base)
    assert strict.verdict == "fail" and all(c.underpowered for c in strict.comparisons)
    assert "inconclusive" in strict.reasons[0] and "could go unseen" in strict.reasons[0]
    lenient = decide(
        _suite([{"metric": "acc", "method": "mcnemar", "margin": 0.02, "when_underpowered": "pass"}]),
        SUITE_HASH,
        cand,
        base,
    )
    assert lenient.verdict == "pass" and lenient.notes and "inconclusive" in lenient.notes[0]


def test_lower_is_better_is_oriented_by_the_suite():
    rng = np.random.default_rng(5)
    loss = rng.normal(2.0, 0.5, N)
    rule = [{"metric": "loss", "method": "bootstrap", "margin": 0.05, "iterations": 500, "seed": 2}]
    worse = _scored("c", _task("a", BASE, loss + 0.2), _task("b", BASE, loss))
    better = _scored("c", _task("a", BASE, loss - 0.2), _task("b", BASE, loss))
    base = _scored("base", _task("a", BASE, loss), _task("b", BASE, loss))
    failed = decide(_suite(rule), SUITE_HASH, worse, base)
    assert failed.verdict == "fail" and failed.comparisons[0].worse_by == pytest.approx(0.2)
    assert failed.comparisons[0].test.method == "bootstrap" and failed.comparisons[0].test.iterations == 500
    assert decide(_suite(rule), SUITE_HASH, better, base).verdict == "pass"


def test_samples_in_another_order_are_aligned_by_id():
    order = np.random.default_rng(9).permutation(N)
    ids = tuple(str(i) for i in order)
    shuffled = _task("a", WORSE[order], ids=ids)
    cand = _scored("cand", shuffled, _task("b", BASE))
    base = _scored("base", _task("a", BASE), _task("b", BASE))
    in_order, _ = _pair(cand_a=WORSE)
    assert (
        decide(_suite(), SUITE_HASH, cand, base).comparisons
        == decide(_suite(), SUITE_HASH, in_order, base).comparisons
    )


def test_thresholds_reviews_and_no_baseline():
    suite = _suite(
        thresholds=[{"task": "a", "rule": "acc >= 0.9"}, {"rule": "loss <= 1"}], reviews_required=2
    )
    cand, _ = _pair()
    decision = decide(suite, SUITE_HASH, cand, None, approving_reviews=1)
    assert decision.verdict == "fail" and decision.baseline is None and not decision.comparisons
    assert [t.passed for t in decision.thresholds] == [False, True, True]
    assert decision.reasons[0].startswith("a: acc is 0.8") and "the rule is acc >= 0.9" in decision.reasons[0]
    assert decision.reasons[1] == "1 approving review(s); the suite requires 2"
    assert decision.notes == ("no baseline: the regression rules were not evaluated",)
    assert decide(suite.model_copy(update={"gate": suite.gate.model_copy(update={"thresholds": []})}),
                  SUITE_HASH, cand, None, approving_reviews=2).verdict == "pass"  # fmt: skip


def _not_comparable(cand: Scored, base: Scored | None = None, suite=None) -> str:
    decision = decide(suite or _suite(), SUITE_HASH, cand, base)
    assert decision.verdict == "not_comparable" and not decision.comparisons and not decision.thresholds
    return " | ".join(decision.reasons)


def test_refusals_to_compare():
    cand, base = _pair(cand_a=WORSE)
    a, b = _task("a", BASE), _task("b", BASE)
    assert "scored on suite version 666666666666, not on 555555555555" in _not_comparable(
        dataclasses.replace(cand, suite_hash="6" * 64), base
    )
    assert "harness versions differ: 2 against 1" in _not_comparable(_scored("c", a, b, version="2"), base)
    assert "task a: versions differ (2 against 1)" in _not_comparable(
        _scored("c", dataclasses.replace(a, version="2"), b), base
    )
    assert "task a: shots differ (5 against 0)" in _not_comparable(
        _scored("c", dataclasses.replace(a, n_shot=5), b), base
    )
    hashed = dataclasses.replace(a, task_hash="f" * 64)
    assert "task a: task hashes differ" in _not_comparable(
        _scored("c", hashed, b), _scored("b", dataclasses.replace(a, task_hash="e" * 64), b)
    )
    limited = dataclasses.replace(_task("a", BASE[:100]), n_original=N)
    assert "scored 100 of the 400 samples of a (a limit was set)" in _not_comparable(
        _scored("c", limited, b), base
    )
    missing = Scored("c", SUITE_HASH, EvalResults("native", "1", {}, {"b": b}))
    assert "has no results for task a" in _not_comparable(missing, base)
    assert "was scored by lm-eval; the suite's harness is native" in _not_comparable(
        Scored("c", SUITE_HASH, dataclasses.replace(cand.results, harness="lm-eval")), base
    )


def test_sample_and_hash_mismatches_are_refused():
    a, b = _task("a", BASE), _task("b", BASE)
    base = _scored("base", a, b)
    other_ids = _task("a", BASE, ids=tuple(str(i + 1) for i in range(N)))
    message = _not_comparable(_scored("c", other_ids, b), base)
    assert (
        "task a: the sample id sets differ: 1 only in the candidate (e.g. 400); "
        "1 only in the baseline (e.g. 0)" in message
    )
    prompts = _task("a", BASE, prompt_hashes=tuple("q" if i == 7 else f"p{i}" for i in range(N)))
    assert "task a: prompt hashes differ on 1 of 400 samples (first: 7)" in _not_comparable(
        _scored("c", prompts, b), base
    )
    unhashed = dataclasses.replace(a, samples=dataclasses.replace(a.samples, prompt_hashes=None))
    assert "only one of the two results has prompt hashes" in _not_comparable(_scored("c", unhashed, b), base)
    no_samples = dataclasses.replace(a, samples=None)
    assert "has no per-sample scores of acc for task a" in _not_comparable(_scored("c", no_samples, b), base)
    graded = _task("a", np.full(N, 0.5))
    assert "are not all 0 or 1; McNemar's test needs binary scores" in _not_comparable(
        _scored("c", graded, b), base
    )


def test_threshold_metric_missing_is_refused():
    a = _task("a", BASE)
    lacking = dataclasses.replace(a, metrics={"loss": a.metrics["loss"]})
    suite = _suite([], thresholds=[{"task": "a", "rule": "acc >= 0.5"}])
    assert "has no value of acc for task a" in _not_comparable(
        _scored("c", lacking, _task("b", BASE)), None, suite
    )
