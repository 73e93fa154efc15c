"""Issue 27, items 3 and 4: what a regression rule can detect among many tasks, and non-inferiority.

Each case is an attack that passed before: one task dropping by 0.30 among 60 unchanged ones read
"no significant change" (the bootstrap's p-value floor 2/(B+1), times 61 under Benjamini-Hochberg,
was above alpha); a drop of 0.043 with interval [-0.067, -0.019] passed a margin of 0.05. The
numbers are checked against computations written here with NumPy, SciPy and statsmodels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from gateway.core.eval.gate import Scored, decide
from gateway.core.eval.gate_table import compare_table
from gateway.core.eval.results import EvalResults, MetricValue, TaskResult, TaskSamples
from gateway.core.eval.suite import build_suite
from gateway.errors import SpecError

SUITE_HASH = "7" * 64


def _suite(tasks: list[str], metric: str, rule: dict) -> object:
    return build_suite(
        {
            "project": "demo",
            "name": "many",
            "datasets": ["d@1"],
            "prompt_template": "{{q}}",
            "harness": {"name": "native", "task_dir": "tasks/x", "program": "jobs/p.py"},
            "tasks": [{"name": t, "metrics": [{"name": metric, "higher_is_better": True}]} for t in tasks],
            "gate": {"regression": [{"metric": metric, **rule}]},
        }
    )


def _scored(label: str, metric: str, columns: dict[str, np.ndarray]) -> Scored:
    tasks = {}
    for name, column in columns.items():
        ids = tuple(str(i) for i in range(len(column)))
        tasks[name] = TaskResult(
            name, "1", 0, None, len(column), len(column), {metric: MetricValue(float(column.mean()))},
            {metric: True}, TaskSamples(ids, {metric: column}),
        )  # fmt: skip
    return Scored(label, SUITE_HASH, EvalResults("native", "1", {"seed": 0}, tasks))


# ---------------------------------------------------------------- item 3: 60 tasks and one regressed

TASKS = [f"t{i:02d}" for i in range(61)]
RNG = np.random.default_rng(27)
BASE = {name: RNG.normal(0.6, 0.1, 40) for name in TASKS}
CAND = {name: column.copy() for name, column in BASE.items()}
CAND["t00"] = BASE["t00"] - 0.30 + RNG.normal(0, 0.02, 40)  # one task drops by 0.30


def test_one_task_dropping_among_sixty_unchanged_is_found():
    suite = _suite(TASKS, "score", {"method": "bootstrap", "margin": 0.05, "decision": "significance"})
    assert suite.bootstrap_iterations(0) == 24399  # enough that 61 x 2/(B+1) <= alpha / 10
    cand, base = _scored("cand", "score", CAND), _scored("base", "score", BASE)
    decision = decide(suite, SUITE_HASH, cand, base)
    assert decision.verdict == "fail"
    by_task = {c.task: c for c in decision.comparisons}
    dropped = by_task["t00"]
    assert dropped.regression and dropped.significant and dropped.test.iterations == 24399
    assert dropped.smallest_p_adjusted == pytest.approx(61 * 2 / 24400)
    assert dropped.smallest_p_adjusted < 0.05
    rows = {r["task"]: r for r in compare_table(suite, decision, cand.results, base.results)["rows"]}
    assert rows["t00"]["verdict"] == "regressed"
    assert all(by_task[t].passed for t in TASKS[1:])
    # Independently: the bootstrap p-value written out with NumPy, then statsmodels' BH over all 61.
    raw = []
    for name in TASKS:
        diff = CAND[name] - BASE[name]
        rng = np.random.default_rng(0)
        means = diff[rng.integers(0, len(diff), (24399, len(diff)))].mean(axis=-1)
        far = min(np.count_nonzero(means <= 0), np.count_nonzero(means >= 0))
        raw.append(min(1.0, 2 * (far + 1) / 24400))
    assert [c.test.p_value for c in decision.comparisons] == pytest.approx(raw, rel=1e-12)
    adjusted = multipletests(raw, alpha=0.05, method="fdr_bh")[1]
    assert [c.p_adjusted for c in decision.comparisons] == pytest.approx(list(adjusted), rel=1e-12)
    assert adjusted[0] < 0.05


def test_a_bootstrap_that_cannot_reach_significance_is_refused_at_registration():
    rule = {"method": "bootstrap", "margin": 0.05, "iterations": 2000}
    with pytest.raises(SpecError) as refused:
        _suite(TASKS, "score", rule)
    message = str(refused.value)
    assert "gate.regression.0" in message and "cannot detect a regression" in message
    assert "2/(2000+1) = 0.001" in message and "61 x 0.001 = 0.061 is not below alpha 0.05" in message
    # What would work, each checked: 2440 resamples (61 x 2/2441 < 0.05 <= 61 x 2/2440), none given,
    # or no correction.
    assert "iterations: 2440 or more" in message and "no iterations" in message
    assert 61 * 2 / 2441 < 0.05 <= 61 * 2 / 2440
    assert _suite(TASKS, "score", {**rule, "iterations": 2440}).bootstrap_iterations(0) == 2440
    with pytest.raises(SpecError, match="iterations: 2440 or more"):
        _suite(TASKS, "score", {**rule, "iterations": 2439})
    assert _suite(TASKS, "score", {**rule, "correction": "none"}).bootstrap_iterations(0) == 2000
    # Past what any number of resamples allowed can do: refused, naming the limit.
    with pytest.raises(SpecError, match="at most 100000 are allowed"):
        _suite(TASKS, "score", {"method": "bootstrap", "alpha": 0.0001})


def test_a_stored_version_that_cannot_reach_it_says_so_task_by_task():
    # A version registered before the check (read back without it) cannot find anything: its tasks
    # are inconclusive, not "no significant change".
    suite = _suite(TASKS, "score", {"method": "bootstrap", "margin": 0.05, "decision": "significance"})
    old = suite.model_copy(
        update={
            "gate": suite.gate.model_copy(
                update={"regression": [suite.gate.regression[0].model_copy(update={"iterations": 2000})]}
            )
        }
    )
    decision = decide(old, SUITE_HASH, _scored("c", "score", CAND), _scored("b", "score", BASE))
    dropped = decision.comparisons[0]
    assert not dropped.significant and dropped.underpowered and not dropped.passed
    assert "none was possible" in dropped.reason and "0.061" in dropped.reason
    assert decision.verdict == "fail"


# ---------------------------------------------------------------- item 4: non-inferiority


def _binary_pairs(n: int, worse: int, better: int) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) 0/1 scores: ``worse`` pairs only the baseline got, ``better`` only the
    candidate; of the rest, half both got and half neither."""
    same = n - worse - better
    base = np.array([1.0] * worse + [0.0] * better + [1.0] * (same // 2) + [0.0] * (same - same // 2))
    cand = np.array([0.0] * worse + [1.0] * better + [1.0] * (same // 2) + [0.0] * (same - same // 2))
    return base, cand


def _gate(rule: dict, base: np.ndarray, cand: np.ndarray):
    suite = _suite(["a"], "acc", {"method": "mcnemar", "margin": 0.05, **rule})
    return suite, decide(
        suite, SUITE_HASH, _scored("c", "acc", {"a": cand}), _scored("b", "acc", {"a": base})
    )


def test_a_drop_whose_interval_reaches_past_the_margin_fails_by_default():
    base, cand = _binary_pairs(1000, worse=97, better=54)
    suite, decision = _gate({}, base, cand)
    (c,) = decision.comparisons
    assert c.test.delta == pytest.approx(-0.043)
    assert (round(c.test.ci_low, 3), round(c.test.ci_high, 3)) == (-0.067, -0.019)  # the numbers
    # Independently: Agresti-Min by hand, the exact p from scipy.
    b_, c_, total = 97.5, 54.5, 1002
    centre = (c_ - b_) / total
    half = stats.norm.ppf(0.975) * math.sqrt((b_ + c_) - (c_ - b_) ** 2 / total) / total
    assert (c.test.ci_low, c.test.ci_high) == pytest.approx((centre - half, centre + half), rel=1e-12)
    assert c.test.p_value == pytest.approx(stats.binomtest(54, 151, 0.5).pvalue, rel=1e-12)
    assert c.decision == "non_inferiority" and c.significant and not c.regression
    assert c.worse_bound == pytest.approx(-c.test.ci_low) and c.worse_bound > 0.05 and not c.within_margin
    assert decision.verdict == "fail" and not c.passed
    assert c.reason.startswith("not shown within the margin") and "(rule: non-inferiority)" in c.reason
    row = compare_table(suite, decision, *(s.results for s in (_scored("c", "acc", {"a": cand}),)),
                        _scored("b", "acc", {"a": base}).results)["rows"][0]  # fmt: skip
    assert (row["verdict"], row["decision"]) == ("not within margin", "non_inferiority")
    # The rule asked for by name: significance lets a drop within the margin pass, and says so.
    _, old = _gate({"decision": "significance"}, base, cand)
    assert old.verdict == "pass" and old.comparisons[0].reason.startswith("worse within the margin 0.05")
    assert "(rule: significance)" in old.comparisons[0].reason


def test_a_drop_whose_interval_stays_within_the_margin_passes():
    base, cand = _binary_pairs(4000, worse=180, better=100)  # a drop of 0.02, interval about +-0.013
    _, decision = _gate({}, base, cand)
    (c,) = decision.comparisons
    assert c.significant and c.within_margin and c.worse_bound < 0.05
    assert decision.verdict == "pass" and c.reason.startswith("worse within the margin")
    same_base, same_cand = _binary_pairs(400, worse=10, better=10)
    _, equal = _gate({}, same_base, same_cand)
    assert equal.verdict == "pass" and equal.comparisons[0].reason.startswith("non-inferior")
