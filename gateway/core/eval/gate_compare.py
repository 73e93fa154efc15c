"""Whether two eval results may be compared at all, and their samples lined up.

A gate compares like with like or not at all: ``problems`` lists every
reason the candidate and the baseline are *not comparable* (different suite
versions or harness versions, a task missing or of another version or shot
count, different ``task_hashes`` or per-sample document/prompt/target
hashes, different sample id sets, a ``--limit`` that left effective <
original, a metric a rule needs that a result lacks). ``aligned`` gives the
baseline's scores in the candidate's sample order once they are comparable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gateway.core.eval.gate_stats import is_binary
from gateway.core.eval.results import EvalResults, TaskResult, TaskSamples
from gateway.core.eval.suite import SuiteVersion

_SHOWN = 3  # sample ids quoted in a message


@dataclass(frozen=True)
class Scored:
    """An eval result to gate: how the decision names it, the suite version it was scored on, its results."""

    label: str
    suite_hash: str
    results: EvalResults


def _short(digest: str) -> str:
    return digest[:12]


def own_problems(suite: SuiteVersion, suite_hash: str, scored: Scored, role: str) -> list[str]:
    """Why one result cannot be gated on this suite version (it is the wrong one, or incomplete)."""
    out = []
    res = scored.results
    if scored.suite_hash != suite_hash:
        out.append(
            f"the {role} {scored.label} was scored on suite version {_short(scored.suite_hash)}, "
            f"not on {_short(suite_hash)}, the version gated"
        )
        return out
    harness = suite.harness
    if res.harness != harness.name:
        out.append(
            f"the {role} {scored.label} was scored by {res.harness}; the suite's harness is {harness.name}"
        )
    elif harness.version is not None and res.harness_version != harness.version:
        out.append(
            f"the {role} {scored.label} was scored by {harness.name} {res.harness_version}; "
            f"the suite pins {harness.version}"
        )
    for task in suite.tasks:
        result = res.tasks.get(task.name)
        if result is None:
            out.append(f"the {role} {scored.label} has no results for task {task.name}")
            continue
        if result.n_effective < result.n_original:
            out.append(
                f"the {role} {scored.label} scored {result.n_effective} of the {result.n_original} samples "
                f"of {task.name} (a limit was set): a subset is not the suite"
            )
    for i, rule in enumerate(suite.gate.thresholds):
        for name in suite.rule_tasks([rule.task], rule.metric, f"gate.thresholds.{i}"):
            result = res.tasks.get(name)
            if result is not None and rule.metric not in result.metrics:
                out.append(f"the {role} {scored.label} has no value of {rule.metric} for task {name}")
    for i, reg in enumerate(suite.gate.regression):
        for name in suite.rule_tasks(reg.tasks, reg.metric, f"gate.regression.{i}"):
            result = res.tasks.get(name)
            if result is None:
                continue
            scores = result.samples.scores.get(reg.metric) if result.samples is not None else None
            if scores is None:
                out.append(
                    f"the {role} {scored.label} has no per-sample scores of {reg.metric} for task {name}; "
                    "a paired rule needs them (lm-eval: --log_samples)"
                )
            elif reg.method == "mcnemar" and not is_binary(scores):
                out.append(
                    f"the {role} {scored.label}'s {reg.metric} scores for task {name} are not all 0 or 1; "
                    "McNemar's test needs binary scores (use method: bootstrap)"
                )
    return out


def pair_problems(suite: SuiteVersion, candidate: Scored, baseline: Scored) -> list[str]:
    """Why the candidate and the baseline, each fine on its own, are not comparable with each other."""
    out = []
    cand, base = candidate.results, baseline.results
    if cand.harness == base.harness and cand.harness_version != base.harness_version:
        out.append(f"harness versions differ: {cand.harness_version} against {base.harness_version}")
    for task in suite.tasks:
        c, b = cand.tasks.get(task.name), base.tasks.get(task.name)
        if c is None or b is None:
            continue
        out.extend(_task_problems(task.name, c, b))
    return out


def _task_problems(name: str, c: TaskResult, b: TaskResult) -> list[str]:
    out = []
    if c.version != b.version:
        out.append(f"task {name}: versions differ ({c.version} against {b.version})")
    if c.n_shot != b.n_shot:
        out.append(f"task {name}: shots differ ({c.n_shot} against {b.n_shot})")
    if c.task_hash and b.task_hash and c.task_hash != b.task_hash:
        out.append(
            f"task {name}: task hashes differ ({_short(c.task_hash)} against {_short(b.task_hash)}): "
            "the documents, prompts or targets are not the same"
        )
    if c.samples is None or b.samples is None:
        if (c.samples is None) != (b.samples is None):
            out.append(f"task {name}: only one of the two results has per-sample scores")
        return out
    problem = _id_problem(name, c.samples, b.samples)
    if problem:
        out.append(problem)
        return out
    order = aligned_order(c.samples, b.samples)
    for label, ch, bh in (
        ("document", c.samples.doc_hashes, b.samples.doc_hashes),
        ("prompt", c.samples.prompt_hashes, b.samples.prompt_hashes),
        ("target", c.samples.target_hashes, b.samples.target_hashes),
    ):
        if (ch is None) != (bh is None):
            out.append(f"task {name}: only one of the two results has {label} hashes")
        elif ch is not None and bh is not None:
            b_in_c_order = bh if order is None else tuple(bh[i] for i in order)
            if ch != b_in_c_order:
                differ = [
                    c.samples.ids[i] for i, (x, y) in enumerate(zip(ch, b_in_c_order, strict=True)) if x != y
                ]
                out.append(
                    f"task {name}: {label} hashes differ on {len(differ)} of {len(ch)} samples "
                    f"(first: {', '.join(differ[:_SHOWN])}): the {label}s are not the same"
                )
    return out


def _id_problem(name: str, c: TaskSamples, b: TaskSamples) -> str | None:
    if c.ids == b.ids:
        return None
    only_c, only_b = set(c.ids) - set(b.ids), set(b.ids) - set(c.ids)
    if not only_c and not only_b:
        return None  # the same samples in another order
    parts = []
    if only_c:
        parts.append(f"{len(only_c)} only in the candidate (e.g. {', '.join(sorted(only_c)[:_SHOWN])})")
    if only_b:
        parts.append(f"{len(only_b)} only in the baseline (e.g. {', '.join(sorted(only_b)[:_SHOWN])})")
    return f"task {name}: the sample id sets differ: {'; '.join(parts)}"


def aligned_order(c: TaskSamples, b: TaskSamples) -> np.ndarray | None:
    """Indices into the baseline's samples in the candidate's order; None when the orders already match."""
    if c.ids == b.ids:
        return None
    where = {ident: i for i, ident in enumerate(b.ids)}
    return np.fromiter((where[ident] for ident in c.ids), dtype=np.intp, count=len(c.ids))


def aligned(c: TaskSamples, b: TaskSamples, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(baseline scores, candidate scores) of ``metric``, sample by sample in the candidate's order."""
    order = aligned_order(c, b)
    base = b.scores[metric] if order is None else b.scores[metric][order]
    return base, c.scores[metric]
