"""The gate decision: a candidate eval result against a suite version's rules and a baseline.

``decide`` returns a ``GateDecision`` holding the verdict and every number
behind it:

- ``not_comparable``: the candidate (or the baseline) was not scored on this
  suite version as it stands, or the two differ where a comparison would be
  meaningless (``gate_compare``); no statistics are computed, the reasons
  say what differs.
- ``fail``: a threshold does not hold on the candidate; a paired regression
  rule finds a task worse than the baseline by more than its margin,
  significantly after Benjamini-Hochberg across the rule's tasks; under the
  rule's default ``decision: non_inferiority``, a task whose interval of the
  change reaches past the margin (its worse end is a drop of ``margin`` or
  more), even when the drop itself is within it; a task shows no
  significant drop but its samples could not have detected one as large as
  the margin (minimum detectable effect > margin, or no adjusted p-value
  below alpha within reach of the test) and the rule says
  ``when_underpowered: fail``; or fewer approving reviews than the suite
  requires. Each comparison's reason ends with the rule that decided it
  (``(rule: non-inferiority)``, ``(rule: significance)``).
- ``pass``: none of these.

Without a baseline the regression rules are not evaluated and say so; the
thresholds and the review count still decide.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gateway.core.eval.gate_compare import Scored, aligned, own_problems, pair_problems
from gateway.core.eval.gate_reach import bootstrap_floor, lone_task_floor
from gateway.core.eval.gate_stats import (
    PairedTest,
    benjamini_hochberg,
    mcnemar,
    paired_bootstrap,
    threshold_holds,
)
from gateway.core.eval.suite import RegressionRule, SuiteVersion

Verdict = Literal["pass", "fail", "not_comparable"]

__all__ = ["Comparison", "GateDecision", "Scored", "ThresholdOutcome", "decide"]


@dataclass(frozen=True)
class ThresholdOutcome:
    task: str
    metric: str
    op: str
    bound: float
    value: float
    passed: bool


@dataclass(frozen=True)
class Comparison:
    """One task of one regression rule: the test, its adjusted p-value, and what it means."""

    rule: int  # index in the suite's gate.regression
    task: str
    metric: str
    higher_is_better: bool
    margin: float
    correction: str
    decision: str  # the rule's: non_inferiority or significance
    test: PairedTest
    p_adjusted: float
    significant: bool
    worse_by: float  # how much worse the candidate is, in the metric's units (negative: better)
    worse_bound: float  # the interval's worse end, as worse_by is (the bound non-inferiority reads)
    within_margin: bool  # worse_bound < margin: non-inferiority shown
    smallest_p_adjusted: float  # the least adjusted p this task could reach (others unchanged)
    regression: bool
    underpowered: bool
    passed: bool
    reason: str


@dataclass(frozen=True)
class GateDecision:
    verdict: Verdict
    reasons: tuple[str, ...]
    suite: str  # project/name
    suite_hash: str
    candidate: str
    baseline: str | None
    thresholds: tuple[ThresholdOutcome, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    reviews_required: int = 0
    approving_reviews: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values; a number that is not finite (an MDE of inf: nothing detectable) is null."""
        return _finite(asdict(self))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def decide(
    suite: SuiteVersion,
    suite_hash: str,
    candidate: Scored,
    baseline: Scored | None = None,
    *,
    approving_reviews: int = 0,
) -> GateDecision:
    """Gate ``candidate`` on ``suite`` (whose content hash is ``suite_hash``) against ``baseline``."""
    head: dict[str, Any] = {
        "suite": f"{suite.project}/{suite.name}",
        "suite_hash": suite_hash,
        "candidate": candidate.label,
        "baseline": baseline.label if baseline is not None else None,
        "reviews_required": suite.gate.reviews_required,
        "approving_reviews": approving_reviews,
    }
    problems = own_problems(suite, suite_hash, candidate, "candidate")
    if baseline is not None:
        base_problems = own_problems(suite, suite_hash, baseline, "baseline")
        problems += base_problems
        if not problems:
            problems += pair_problems(suite, candidate, baseline)
    if problems:
        return GateDecision(verdict="not_comparable", reasons=tuple(problems), **head)

    reasons: list[str] = []
    notes: list[str] = []
    thresholds = _thresholds(suite, candidate)
    for t in thresholds:
        if not t.passed:
            reasons.append(
                f"{t.task}: {t.metric} is {t.value:.4g}; the rule is {t.metric} {t.op} {t.bound:g}"
            )
    comparisons: list[Comparison] = []
    if baseline is None:
        if suite.gate.regression:
            notes.append("no baseline: the regression rules were not evaluated")
    else:
        for index, rule in enumerate(suite.gate.regression):
            comparisons.extend(_regression(suite, index, rule, candidate, baseline))
        reasons.extend(f"{c.task}: {c.reason}" for c in comparisons if not c.passed)
        notes.extend(f"{c.task}: {c.reason}" for c in comparisons if c.passed and c.underpowered)
    if approving_reviews < suite.gate.reviews_required:
        reasons.append(
            f"{approving_reviews} approving review(s); the suite requires {suite.gate.reviews_required}"
        )
    return GateDecision(
        verdict="fail" if reasons else "pass",
        reasons=tuple(reasons),
        thresholds=tuple(thresholds),
        comparisons=tuple(comparisons),
        notes=tuple(notes),
        **head,
    )


def _thresholds(suite: SuiteVersion, candidate: Scored) -> list[ThresholdOutcome]:
    out = []
    for i, rule in enumerate(suite.gate.thresholds):
        metric, op, bound = rule.metric, rule.op, rule.value
        for name in suite.rule_tasks([rule.task], metric, f"gate.thresholds.{i}"):
            value = candidate.results.tasks[name].metrics[metric].value
            out.append(ThresholdOutcome(name, metric, op, bound, value, threshold_holds(value, op, bound)))
    return out


def _regression(
    suite: SuiteVersion, index: int, rule: RegressionRule, candidate: Scored, baseline: Scored
) -> list[Comparison]:
    names = suite.rule_tasks(rule.tasks, rule.metric, f"gate.regression.{index}")
    iterations = suite.bootstrap_iterations(index)
    tests: list[tuple[str, bool, PairedTest]] = []
    for name in names:
        hib = suite.task(name).metric(rule.metric).higher_is_better  # type: ignore[union-attr]  # rule_tasks checked the metric exists
        c, b = candidate.results.tasks[name], baseline.results.tasks[name]
        base, cand = aligned(c.samples, b.samples, rule.metric)  # type: ignore[arg-type]  # own_problems refused results without them
        if rule.method == "mcnemar":
            test = mcnemar(base, cand, alpha=rule.alpha, power=rule.power)
        else:
            test = paired_bootstrap(
                base, cand, alpha=rule.alpha, power=rule.power, iterations=iterations, seed=rule.seed
            )
        tests.append((name, hib, test))
    raw = [t.p_value for _, _, t in tests]
    adjusted = benjamini_hochberg(raw, rule.alpha)[1] if rule.correction == "bh" else raw
    return [
        _judge(index, rule, name, hib, test, p, lone_task_floor(_floor(test), rule, len(names)))
        for (name, hib, test), p in zip(tests, adjusted, strict=True)
    ]


def _floor(test: PairedTest) -> float:
    """The smallest p-value the test could have given on these samples."""
    if test.method == "bootstrap":
        return bootstrap_floor(test.iterations or 1)
    return min(1.0, 2 * 0.5**test.n)  # McNemar: every pair discordant, all one way


def _judge(
    index: int, rule: RegressionRule, task: str, hib: bool, test: PairedTest, p_adj: float, reach: float
) -> Comparison:
    worse_by = -test.delta if hib else test.delta
    # The interval's worse end, as a drop (positive: worse than the baseline by that much).
    bound = -test.ci_low if hib else test.ci_high
    significant = p_adj < rule.alpha
    unreachable = reach >= rule.alpha
    underpowered = not significant and (test.mde > rule.margin or unreachable)
    name = "non-inferiority" if rule.decision == "non_inferiority" else "significance"
    numbers = (
        f"{rule.metric} {test.baseline_mean:.4g} -> {test.candidate_mean:.4g} "
        f"(change {test.delta:+.4g}, {100 * (1 - rule.alpha):g}% CI "
        f"[{test.ci_low:+.4g}, {test.ci_high:+.4g}], "
        f"{test.method} p={test.p_value:.3g}, adjusted p={p_adj:.3g}, n={test.n})"
    )
    within = bound < rule.margin
    regression = significant and worse_by > rule.margin
    if rule.decision == "non_inferiority":
        shown = f"the interval's worse end is a drop of {bound:.4g}"
        if within:
            passed = True
            what = "worse within the margin" if significant and worse_by > 0 else "non-inferior"
            reason = f"{what}: {numbers}; {shown}, within the margin {rule.margin:g}"
        elif regression:
            passed, reason = (
                False,
                f"regressed: {numbers}; worse by {worse_by:.4g}, beyond the margin {rule.margin:g}",
            )
        elif underpowered:
            passed = rule.when_underpowered == "pass"
            reason = _inconclusive(rule, test, numbers, reach) + f"; {shown}, not within the margin"
        else:
            passed = False
            reason = (
                f"not shown within the margin: {numbers}; {shown}, past the margin {rule.margin:g}: "
                "a drop that large is not ruled out"
            )
    elif regression:
        passed, reason = (
            False,
            f"regressed: {numbers}; worse by {worse_by:.4g}, beyond the margin {rule.margin:g}",
        )
    elif underpowered:
        passed = rule.when_underpowered == "pass"
        reason = _inconclusive(rule, test, numbers, reach)
    elif significant and worse_by > 0:
        passed, reason = True, f"worse within the margin {rule.margin:g}: {numbers}"
    else:
        passed, reason = True, f"no regression beyond the margin {rule.margin:g}: {numbers}"
    return Comparison(
        rule=index,
        task=task,
        metric=rule.metric,
        higher_is_better=hib,
        margin=rule.margin,
        correction=rule.correction,
        decision=rule.decision,
        test=test,
        p_adjusted=float(p_adj),
        significant=significant,
        worse_by=float(worse_by),
        worse_bound=float(bound),
        within_margin=within,
        smallest_p_adjusted=float(reach),
        regression=regression,
        underpowered=underpowered,
        passed=passed,
        reason=f"{reason} (rule: {name})",
    )


def _inconclusive(rule: RegressionRule, test: PairedTest, numbers: str, reach: float) -> str:
    if reach >= rule.alpha:
        return (
            f"inconclusive: {numbers}; no significant change, and none was possible: the smallest "
            f"adjusted p-value these samples and this test can give is {reach:.3g}, not below alpha "
            f"{rule.alpha:g} (when_underpowered: {rule.when_underpowered})"
        )
    mde = "any" if math.isinf(test.mde) else f"{test.mde:.4g}"
    return (
        f"inconclusive: {numbers}; no significant change, but the smallest detectable change is {mde} "
        f"(power {rule.power:g}), more than the margin {rule.margin:g}: a regression that large could "
        f"go unseen (when_underpowered: {rule.when_underpowered})"
    )
