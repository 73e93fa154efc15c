"""Gate statistics on paired per-sample scores: McNemar, paired bootstrap, BH, MDE, thresholds.

Every function takes the baseline's and the candidate's scores aligned by
sample (``baseline[i]`` and ``candidate[i]`` are the same sample) and returns
plain numbers. ``delta`` is ``mean(candidate) - mean(baseline)`` in the
metric's own units; which sign is worse is the caller's to say (it knows
whether higher is better).

- ``mcnemar``: McNemar's exact test for 0/1 scores: the two-sided binomial
  test of the discordant pairs (``scipy.stats.binomtest``; equal to
  ``statsmodels ... mcnemar(exact=True)``); the interval of ``delta`` is
  the Wald interval with Agresti and Min's adjustment (half a pair added to
  each of the four cells; Agresti & Min 2005, Statistics in Medicine
  24:729-740), which, unlike an interval conditional on the number of
  discordant pairs, carries the uncertainty of that number too; the minimum
  detectable effect is the smallest difference at which the exact test's
  own power (``mcnemar_power``, summed over the binomial number of
  discordant pairs) reaches ``power``, with the discordant share the larger
  of the observed one and the difference itself (an effect d needs at least
  d*n discordant pairs).
- ``paired_bootstrap``: resamples the per-sample differences with
  replacement (``iterations`` times, ``numpy.random.default_rng(seed)``,
  in batches drawn exactly as ``scipy.stats.bootstrap`` draws them, so its
  percentile interval is the same), the percentile interval of the mean
  difference, a two-sided p-value from the share of resampled means on each
  side of 0 (with the +1 correction, so it is never 0), and the minimum
  detectable effect ``(z[1-alpha/2] + z[power]) * SE`` from the bootstrap SE
  (a normal approximation: the bootstrap has no exact power to invert).
- ``benjamini_hochberg``: ``statsmodels.stats.multitest.multipletests(method="fdr_bh")``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

BOOTSTRAP_CELLS = 1 << 22  # resampled values held at once (32 MiB of indices)
_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


@dataclass(frozen=True)
class PairedTest:
    """The outcome of one paired comparison; every number the decision used."""

    method: str  # "mcnemar" or "bootstrap"
    n: int  # samples compared
    baseline_mean: float
    candidate_mean: float
    delta: float  # candidate - baseline, in the metric's units
    ci_low: float  # interval of delta at confidence 1 - alpha
    ci_high: float
    p_value: float  # two-sided, for delta = 0
    alpha: float
    power: float
    mde: float  # the smallest |delta| the test finds with that power at alpha (inf: none up to 1)
    candidate_better: int | None = None  # McNemar: pairs where only the candidate scored 1
    candidate_worse: int | None = None  # McNemar: pairs where only the baseline scored 1
    iterations: int | None = None  # bootstrap
    seed: int | None = None  # bootstrap
    standard_error: float | None = None  # bootstrap: standard deviation of the resampled mean differences


def _check_pair(baseline: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    baseline = np.asarray(baseline, dtype=np.float64)
    candidate = np.asarray(candidate, dtype=np.float64)
    if baseline.ndim != 1 or baseline.shape != candidate.shape:
        raise ValueError(
            f"paired scores need two 1-d arrays of one length, got {baseline.shape} and {candidate.shape}"
        )
    if len(baseline) == 0:
        raise ValueError("no samples to compare")
    if not (np.isfinite(baseline).all() and np.isfinite(candidate).all()):
        raise ValueError("scores must be finite numbers (a NaN or infinity was given)")
    return baseline, candidate


def is_binary(values: np.ndarray) -> bool:
    """True when every value is 0 or 1."""
    return bool(np.all((values == 0) | (values == 1)))


def mcnemar(
    baseline: np.ndarray, candidate: np.ndarray, *, alpha: float = 0.05, power: float = 0.8
) -> PairedTest:
    """McNemar's exact test on paired 0/1 scores (see the module docstring); ValueError if not 0/1."""
    baseline, candidate = _check_pair(baseline, candidate)
    if not (is_binary(baseline) and is_binary(candidate)):
        raise ValueError("McNemar's test needs 0/1 scores; use the bootstrap for a continuous metric")
    n = len(baseline)
    better = int(np.count_nonzero(candidate > baseline))
    worse = int(np.count_nonzero(candidate < baseline))
    discordant = better + worse
    # The two agree on every sample: the exact test has nothing to weigh (p = 1).
    p_value = float(stats.binomtest(better, discordant, 0.5).pvalue) if discordant else 1.0
    ci_low, ci_high = agresti_min_interval(better, worse, n, alpha)
    return PairedTest(
        method="mcnemar",
        n=n,
        baseline_mean=float(baseline.mean()),
        candidate_mean=float(candidate.mean()),
        delta=(better - worse) / n,
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        p_value=min(1.0, p_value),
        alpha=alpha,
        power=power,
        mde=mcnemar_mde(n, discordant, alpha=alpha, power=power),
        candidate_better=better,
        candidate_worse=worse,
    )


def agresti_min_interval(better: int, worse: int, n: int, alpha: float) -> tuple[float, float]:
    """The 1 - alpha interval of the difference of paired proportions, ``(better - worse) / n``.

    Wald's interval after adding 1/2 to each cell of the 2x2 table (so n + 2
    pairs), clipped to [-1, 1]: Agresti & Min (2005).
    """
    b, c, total = worse + 0.5, better + 0.5, n + 2
    delta = (c - b) / total
    se = math.sqrt(max((b + c) - (c - b) ** 2 / total, 0.0)) / total
    z = stats.norm.ppf(1 - alpha / 2)
    return max(-1.0, delta - z * se), min(1.0, delta + z * se)


def mcnemar_power(n: int, psi: float, d: float, *, alpha: float, _cuts: _Cuts | None = None) -> float:
    """The power of the exact two-sided McNemar test (``mcnemar``: rejected when p < ``alpha``).

    For ``n`` pairs whose discordant share is ``psi`` and whose difference of
    paired proportions is ``d`` (0 <= d <= psi <= 1): the number of discordant
    pairs D is Binomial(n, psi); given D, the pairs going to one side are
    Binomial(D, (psi + d) / (2 psi)), and the test rejects when the two-sided
    binomial p-value at 1/2 is below alpha, i.e. when that count is at most
    k(D) or at least D - k(D), k(D) the largest k with P(Bin(D, 1/2) <= k) < alpha/2.
    The sum runs over D within ten standard deviations (and twenty pairs) of n psi.
    """
    if n <= 0 or psi <= 0:
        return 0.0
    psi = min(1.0, psi)
    d = min(abs(d), psi)
    if psi >= 1.0:
        counts = np.array([n])
        weights = np.array([1.0])
    else:
        # Ten standard deviations and twenty pairs each side hold all but far less than 1e-15 of it.
        mean, sd = n * psi, math.sqrt(n * psi * (1 - psi))
        low, high = max(0, int(mean - 10 * sd) - 20), min(n, int(mean + 10 * sd) + 20)
        counts = np.arange(low, high + 1)
        weights = stats.binom.pmf(counts, n, psi)
    k = (_cuts or _Cuts(n, alpha))(counts)
    q = min(1.0, (psi + d) / (2 * psi))
    below = np.where(k >= 0, stats.binom.cdf(k, counts, q), 0.0)
    above = np.where(k >= 0, stats.binom.sf(counts - k - 1, counts, q), 0.0)
    return float(np.sum(weights * np.minimum(below + above, 1.0)))


class _Cuts:
    """Per number of discordant pairs D (0..n), the largest k with P(Bin(D, 1/2) <= k) < alpha / 2
    (-1: none); each D's cut computed once, as the MDE's search asks for overlapping ranges."""

    def __init__(self, n: int, alpha: float) -> None:
        self.alpha = alpha
        self.known = np.full(n + 1, -2, dtype=np.int64)  # -2: not computed yet

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        todo = counts[self.known[counts] == -2]
        if len(todo):
            self.known[todo] = _mcnemar_cut(todo, self.alpha)
        return self.known[counts]


def _mcnemar_cut(counts: np.ndarray, alpha: float) -> np.ndarray:
    half = alpha / 2
    # The normal quantile lands within a pair or two; the binomial cdf itself settles it exactly.
    k = np.floor(counts / 2 - stats.norm.isf(half) * np.sqrt(counts) / 2).astype(np.int64)
    k = np.maximum(k, -1)
    while True:
        high = (k >= 0) & (stats.binom.cdf(k, counts, 0.5) >= half)
        if not high.any():
            break
        k = np.where(high, k - 1, k)
    while True:
        low = (k + 1 <= counts) & (stats.binom.cdf(k + 1, counts, 0.5) < half)
        if not low.any():
            break
        k = np.where(low, k + 1, k)
    return np.where(2 * (k + 1) > counts, -1, k)  # the two tails never overlap at alpha <= 0.5


def mcnemar_mde(n: int, discordant: int, *, alpha: float, power: float) -> float:
    """The smallest difference of paired proportions McNemar's exact test finds with ``power`` at ``alpha``.

    The power is the exact test's (``mcnemar_power``), with the discordant
    share psi = max(observed share, d) (an effect d needs at least d*n
    discordant pairs), so at the returned d the test's power is at least
    ``power`` (d found to 1e-10); Connor's (1987) normal approximation, used
    before, gave effects at which the exact test's power was 0.77-0.79 for
    0.80. Returns inf when no difference up to 1 reaches ``power``.
    """
    if n <= 0:
        return math.inf
    share = discordant / n
    cuts = _Cuts(n, alpha)

    def shortfall(d: float) -> float:
        return mcnemar_power(n, max(share, d), d, alpha=alpha, _cuts=cuts) - power

    if shortfall(1.0) < 0:
        return math.inf
    if shortfall(1e-12) >= 0:
        return 1e-12
    # The power grows with d (its tails get heavier, psi only grows) and is continuous in it.
    from scipy.optimize import brentq

    d = float(brentq(shortfall, 1e-12, 1.0, xtol=1e-10))
    while shortfall(d) < 0:  # the root to xtol may sit a hair below the power asked for
        d = min(1.0, d + 1e-10)
    return d


def bootstrap_batch(n: int, iterations: int) -> int:
    """Resamples drawn per batch for ``n`` samples (pass the same ``batch`` to ``scipy.stats.bootstrap``)."""
    return max(1, min(iterations, BOOTSTRAP_CELLS // max(n, 1)))


def bootstrap_means(differences: np.ndarray, iterations: int, seed: int) -> np.ndarray:
    """``iterations`` means of ``differences`` resampled with replacement, as scipy.stats.bootstrap draws."""
    n = len(differences)
    rng = np.random.default_rng(seed)
    batch = bootstrap_batch(n, iterations)
    out = np.empty(iterations, dtype=np.float64)
    for start in range(0, iterations, batch):
        size = min(batch, iterations - start)
        index = rng.integers(0, n, (size, n))
        out[start : start + size] = differences[index].mean(axis=-1)
    return out


def paired_bootstrap(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    iterations: int = 2000,
    seed: int = 0,
) -> PairedTest:
    """The paired bootstrap of the mean difference (see the module docstring)."""
    baseline, candidate = _check_pair(baseline, candidate)
    if iterations < 1:
        raise ValueError("the bootstrap needs at least one resample")
    differences = candidate - baseline
    means = bootstrap_means(differences, iterations, seed)
    ci_low, ci_high = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    at_most_0 = int(np.count_nonzero(means <= 0))
    at_least_0 = int(np.count_nonzero(means >= 0))
    p_value = min(1.0, 2 * (min(at_most_0, at_least_0) + 1) / (iterations + 1))
    se = float(means.std(ddof=1)) if iterations > 1 else 0.0
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return PairedTest(
        method="bootstrap",
        n=len(differences),
        baseline_mean=float(baseline.mean()),
        candidate_mean=float(candidate.mean()),
        delta=float(differences.mean()),
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        p_value=p_value,
        alpha=alpha,
        power=power,
        mde=float(z * se),
        iterations=iterations,
        seed=seed,
        standard_error=se,
    )


def benjamini_hochberg(p_values: Sequence[float], alpha: float) -> tuple[list[bool], list[float]]:
    """Which hypotheses BH rejects at false discovery rate ``alpha``, and the adjusted p-values."""
    if not len(p_values):
        return [], []
    from statsmodels.stats.multitest import multipletests

    reject, adjusted, _, _ = multipletests(list(p_values), alpha=alpha, method="fdr_bh")
    return [bool(r) for r in reject], [float(p) for p in adjusted]


def threshold_holds(value: float, op: str, bound: float) -> bool:
    """``value OP bound`` for OP in >= > <= <; ValueError for another OP or a non-finite value."""
    if op not in _OPS:
        raise ValueError(f"unknown comparison {op!r}; use one of {', '.join(_OPS)}")
    if not math.isfinite(value):
        raise ValueError("the value to compare is not a finite number")
    return bool(_OPS[op](value, bound))
