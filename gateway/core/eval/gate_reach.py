"""What a paired regression rule can detect at all, before any sample is seen: resampling floors.

A bootstrap of B resamples cannot give a p-value below ``2 / (B + 1)`` (the
+1 correction); Benjamini-Hochberg over m tasks multiplies the smallest
p-value by m when the other tasks did not move. So one task regressing among
m unchanged ones is significant only if ``m * 2 / (B + 1) < alpha``: at
B = 2000 and alpha = 0.05, never once m reaches 50, however large the drop.

- ``bootstrap_iterations`` is the number of resamples a rule uses: the
  rule's own, or, when it gives none, enough that a lone task's smallest
  adjusted p-value is at most a tenth of alpha (at least 2,000, at most
  ``MAX_ITERATIONS``);
- ``reach_problem`` says, for a rule and its task count, why no task could
  ever be significant, and what would work; a suite version with such a
  rule is refused when it is registered (``suite.build_suite``);
- ``lone_task_floor`` is the smallest adjusted p-value one task can reach
  at decision time, for either method (McNemar's exact test with n pairs:
  ``2 * 0.5**n``, all of them going one way).

Pure arithmetic, no NumPy: the suite model imports it.
"""

from __future__ import annotations

import math

from gateway.core.eval.suite_parts import MAX_ITERATIONS, RegressionRule

DEFAULT_ITERATIONS = 2000
RESOLUTION = 10  # chosen resamples put a lone task's smallest adjusted p at alpha / RESOLUTION or below


def tested_together(rule: RegressionRule, tasks: int) -> int:
    """How many p-values the rule's correction weighs together (1 without a correction)."""
    return tasks if rule.correction == "bh" else 1


def bootstrap_floor(iterations: int) -> float:
    """The smallest p-value a paired bootstrap of ``iterations`` resamples gives."""
    return 2 / (iterations + 1)


def bootstrap_iterations(rule: RegressionRule, tasks: int) -> int:
    """The resamples the rule's bootstrap draws for ``tasks`` tasks (see the module docstring)."""
    if rule.iterations is not None:
        return rule.iterations
    m = tested_together(rule, tasks)
    wanted = math.ceil(2 * RESOLUTION * m / rule.alpha) - 1
    return min(MAX_ITERATIONS, max(DEFAULT_ITERATIONS, wanted))


def lone_task_floor(floor: float, rule: RegressionRule, tasks: int) -> float:
    """The smallest adjusted p-value of one task among ``tasks`` when the others show nothing."""
    return min(1.0, floor * tested_together(rule, tasks))


def reach_problem(rule: RegressionRule, tasks: int) -> str | None:
    """Why the rule could never find one task of ``tasks`` significant, and what would; None if it can."""
    if rule.method != "bootstrap":
        return None  # McNemar's exact test has no resampling floor; its samples decide (lone_task_floor)
    iterations = bootstrap_iterations(rule, tasks)
    m = tested_together(rule, tasks)
    floor = bootstrap_floor(iterations)
    if lone_task_floor(floor, rule, tasks) < rule.alpha:
        return None
    needed = math.ceil(2 * m / rule.alpha)  # the smallest B with m * 2 / (B + 1) < alpha
    over = f"{m} tasks under Benjamini-Hochberg" if m > 1 else "one task"
    ways = (
        [f"iterations: {needed} or more"]
        if needed <= MAX_ITERATIONS
        else [f"iterations would have to be {needed} or more (at most {MAX_ITERATIONS} are allowed)"]
    )
    if rule.iterations is not None and needed <= MAX_ITERATIONS:
        ways.append("no iterations (the gateway then picks enough)")
    if m > 1:
        largest = max(1, math.ceil(rule.alpha * (MAX_ITERATIONS + 1) / 2) - 1)
        ways.append(f"rules of at most {largest} tasks each")
    ways.append(f"a larger alpha than {rule.alpha:g}")
    return (
        f"cannot detect a regression: with {over}, {iterations} bootstrap resamples give no p-value "
        f"below 2/({iterations}+1) = {floor:.3g}, and {m} x {floor:.3g} = {m * floor:.3g} is not below "
        f"alpha {rule.alpha:g}, so no task could ever be significant; use " + ", or ".join(ways)
    )
