"""The per-task table of a comparison: both scores, the difference with its interval, p, a verdict.

``compare_table(suite, decision, a, b)`` lays a ``GateDecision`` of ``a``
(the candidate) against ``b`` (the baseline) out as one row per task and
metric of the suite: the two values with their standard errors, and, where
a paired rule tested the metric, the change ``a - b`` with its interval,
the p-values, the minimum detectable effect and what the row means:

- ``regressed``: worse by more than the margin, significantly;
- ``inconclusive``: no significant change, but a change as large as the
  margin could have gone unseen (minimum detectable effect > margin);
- ``not within margin``: (non-inferiority) the interval of the change reaches
  past the margin, though the drop is not significantly beyond it;
- ``worse within margin``: significantly worse, by no more than the margin;
- ``better``: significantly better;
- ``no significant change``: none of these;
- ``not tested``: no paired rule covers the metric (the values only);
- ``not comparable``: the two results cannot be compared at all (the
  decision's reasons say why); no statistics are shown.
"""

from __future__ import annotations

import math
from typing import Any

from gateway.core.eval.gate import Comparison, GateDecision
from gateway.core.eval.results import EvalResults
from gateway.core.eval.suite import SuiteVersion


def _num(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def row_verdict(c: Comparison) -> str:
    """How one task's comparison reads in a table: regressed, inconclusive, not within margin, worse within
    margin, better or no significant change."""
    if c.regression:
        return "regressed"
    if c.underpowered:
        return "inconclusive"
    if c.decision == "non_inferiority" and not c.within_margin:
        return "not within margin"
    if c.significant and c.worse_by > 0:
        return "worse within margin"
    if c.significant:
        return "better"
    return "no significant change"


def compare_table(
    suite: SuiteVersion, decision: GateDecision, a: EvalResults, b: EvalResults
) -> dict[str, Any]:
    """JSON-ready: the overall verdict, reasons and notes, and one row per (task, metric)."""
    comparable = decision.verdict != "not_comparable"
    tested = {(c.task, c.metric): c for c in decision.comparisons}
    rows = []
    for task in suite.tasks:
        for metric in task.metrics:
            ta, tb = a.tasks.get(task.name), b.tasks.get(task.name)
            va = ta.metrics.get(metric.name) if ta else None
            vb = tb.metrics.get(metric.name) if tb else None
            row: dict[str, Any] = {
                "task": task.name,
                "metric": metric.name,
                "higher_is_better": metric.higher_is_better,
                "a": _num(va.value) if va else None,
                "a_stderr": _num(va.stderr) if va else None,
                "b": _num(vb.value) if vb else None,
                "b_stderr": _num(vb.stderr) if vb else None,
                "delta": _num(va.value - vb.value) if va and vb else None,
                "ci_low": None,
                "ci_high": None,
                "confidence": None,
                "p_value": None,
                "p_adjusted": None,
                "mde": None,
                "margin": None,
                "method": None,
                "decision": None,
                "n": None,
                "verdict": "not comparable" if not comparable else "not tested",
                "reason": None,
            }
            c = tested.get((task.name, metric.name))
            if comparable and c is not None:
                row.update(
                    delta=_num(c.test.delta),
                    ci_low=_num(c.test.ci_low),
                    ci_high=_num(c.test.ci_high),
                    confidence=1 - c.test.alpha,
                    p_value=_num(c.test.p_value),
                    p_adjusted=_num(c.p_adjusted),
                    mde=_num(c.test.mde),
                    margin=c.margin,
                    method=c.test.method,
                    decision=c.decision,
                    n=c.test.n,
                    verdict=row_verdict(c),
                    reason=c.reason,
                )
            rows.append(row)
    return {
        "verdict": decision.verdict,
        "comparable": comparable,
        "reasons": list(decision.reasons),
        "notes": list(decision.notes),
        "rows": rows,
    }
