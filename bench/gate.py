"""Benchmark: a gate decision on two results of 100,000 samples x 10 tasks, against direct NumPy/SciPy.

    .venv/bin/python -m bench.gate [SAMPLES] [TASKS]

Builds a candidate and a baseline result in memory (defaults: 100,000
samples per task, 10 tasks; half the tasks with a 0/1 metric gated by
McNemar's exact test, half with a continuous one gated by a paired bootstrap
of 1,000 resamples; string sample ids and per-sample prompt hashes, as the
parsers give them), then times, best of 3, in this process:

- ``gateway.core.eval.gate.decide``: checks that the two may be compared (suite
  version, task versions, sample id sets, every prompt hash), lines the
  samples up, runs the tests, Benjamini-Hochberg across each rule's tasks,
  judges each task;
- the same paired computation written directly with NumPy and SciPy on
  arrays already lined up: the discordant counts and ``scipy.stats.binomtest``,
  the bootstrap resampling and its percentile interval, and statsmodels'
  ``multipletests``.

Both must give the same p-values and intervals. Prints the times and the
ratio; exits 1 when the ratio is 2 or more, or when the numbers differ.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from gateway.core.eval.gate import Scored, decide
from gateway.core.eval.results import EvalResults, MetricValue, TaskResult, TaskSamples
from gateway.core.eval.suite import build_suite

TARGET = 2.0
ITERATIONS = 1000
BATCH = 40  # resamples drawn at once by the direct version
SUITE_HASH = "b" * 64


def _suite(tasks: int):
    names = [f"task{i:02d}" for i in range(tasks)]
    binary, continuous = names[: tasks // 2], names[tasks // 2 :]
    return (
        build_suite(
            {
                "project": "bench",
                "name": "gate",
                "datasets": ["bench@1"],
                "prompt_template": "{{q}}",
                "harness": {"name": "native", "task_dir": "tasks/bench", "program": "jobs/bench.py"},
                "tasks": [
                    {
                        "name": n,
                        "metrics": [{"name": "acc" if n in binary else "score", "higher_is_better": True}],
                    }
                    for n in names
                ],
                "gate": {
                    "regression": [
                        {"metric": "acc", "tasks": binary, "method": "mcnemar", "margin": 0.01},
                        {
                            "metric": "score",
                            "tasks": continuous,
                            "method": "bootstrap",
                            "margin": 0.01,
                            "iterations": ITERATIONS,
                            "seed": 0,
                        },
                    ]  # fmt: skip
                },
            }
        ),
        binary,
        continuous,
    )


def _results(
    label: str, arrays: dict[str, np.ndarray], ids: tuple[str, ...], hashes: tuple[str, ...]
) -> Scored:
    tasks = {}
    for name, values in arrays.items():
        metric = "acc" if set(np.unique(values[:100])) <= {0.0, 1.0} else "score"
        samples = TaskSamples(ids=ids, scores={metric: values}, prompt_hashes=hashes)
        tasks[name] = TaskResult(
            name,
            "1",
            0,
            None,
            len(ids),
            len(ids),
            {metric: MetricValue(float(values.mean()))},
            samples=samples,
        )
    return Scored(label, SUITE_HASH, EvalResults("native", "1", {"seed": 0}, tasks))


def build(samples: int, tasks: int):
    suite, binary, continuous = _suite(tasks)
    rng = np.random.default_rng(1)
    base, cand = {}, {}
    for name in binary:
        base[name] = (rng.random(samples) < 0.7).astype(np.float64)
        cand[name] = np.where(rng.random(samples) < 0.1, 1 - base[name], base[name])
    for name in continuous:
        base[name] = rng.normal(-2.0, 1.0, samples)
        cand[name] = base[name] + rng.normal(-0.005, 0.5, samples)
    ids = tuple(str(i) for i in range(samples))
    hashes = tuple(f"{i:064x}" for i in range(samples))
    # The candidate's own tuples (equal, not the same objects), as two parsed files give.
    cand_ids, cand_hashes = tuple(str(i) for i in range(samples)), tuple(f"{i:064x}" for i in range(samples))
    return (
        suite,
        _results("cand", cand, cand_ids, cand_hashes),
        _results("base", base, ids, hashes),
        binary,
        continuous,
    )


def direct(
    base: dict, cand: dict, binary: list[str], continuous: list[str]
) -> dict[str, tuple[float, float, float]]:
    """p-value (BH-adjusted), interval low and high per task, computed directly."""
    out: dict[str, tuple[float, float, float]] = {}
    p_bin = []
    for name in binary:
        b, c = np.count_nonzero(cand[name] < base[name]), np.count_nonzero(cand[name] > base[name])
        p_bin.append(stats.binomtest(int(c), int(b + c), 0.5).pvalue)
    for name, p in zip(binary, multipletests(p_bin, alpha=0.05, method="fdr_bh")[1], strict=True):
        out[name] = (float(p), 0.0, 0.0)
    p_cont = []
    for name in continuous:
        d = cand[name] - base[name]
        rng = np.random.default_rng(0)
        means = np.concatenate(
            [
                d[rng.integers(0, len(d), (min(BATCH, ITERATIONS - k), len(d)))].mean(axis=-1)
                for k in range(0, ITERATIONS, BATCH)
            ]
        )
        low, high = np.percentile(means, [2.5, 97.5])
        far = min(np.count_nonzero(means <= 0), np.count_nonzero(means >= 0))
        p_cont.append(min(1.0, 2 * (far + 1) / (ITERATIONS + 1)))
        out[name] = (0.0, float(low), float(high))
    for name, p in zip(continuous, multipletests(p_cont, alpha=0.05, method="fdr_bh")[1], strict=True):
        out[name] = (float(p), *out[name][1:])
    return out


def best_of(runs: int, call):
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return min(times), result


def main(argv: list[str]) -> int:
    samples = int(argv[0]) if argv else 100_000
    tasks = int(argv[1]) if len(argv) > 1 else 10
    suite, cand, base, binary, continuous = build(samples, tasks)
    arrays = {
        s.label: {n: next(iter(t.samples.scores.values())) for n, t in s.results.tasks.items()}
        for s in (cand, base)
    }
    decide(suite, SUITE_HASH, cand, base)  # warm up: imports, first calls
    direct(arrays["base"], arrays["cand"], binary, continuous)
    t_gate, decision = best_of(3, lambda: decide(suite, SUITE_HASH, cand, base))
    t_direct, reference = best_of(3, lambda: direct(arrays["base"], arrays["cand"], binary, continuous))
    assert decision.verdict != "not_comparable", decision.reasons
    mismatched = []
    for c in decision.comparisons:
        p, low, high = reference[c.task]
        ok = np.isclose(c.p_adjusted, p, rtol=1e-9)
        if c.test.method == "bootstrap":
            ok = (
                ok
                and np.isclose(c.test.ci_low, low, rtol=1e-9)
                and np.isclose(c.test.ci_high, high, rtol=1e-9)
            )
        if not ok:
            mismatched.append(c.task)
    ratio = t_gate / t_direct
    kinds = f"{len(binary)} McNemar, {len(continuous)} bootstrap x {ITERATIONS}"
    print(f"gate decision on {tasks} tasks x {samples:,} samples ({kinds})")
    print(f"  gateway.core.eval.gate.decide   {t_gate:8.3f} s   verdict {decision.verdict}")
    print(f"  direct NumPy/SciPy         {t_direct:8.3f} s")
    print(f"  ratio                      {ratio:8.2f}x   (target < {TARGET:g}x)")
    if mismatched:
        print(f"  numbers differ from the direct computation on: {', '.join(mismatched)}")
        return 1
    return 0 if ratio < TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
