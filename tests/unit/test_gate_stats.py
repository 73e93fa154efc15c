"""Gate statistics against references computed independently with SciPy and statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from gateway.core.eval import gate_stats as gs


def _pairs(n11: int, n10: int, n01: int, n00: int) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) 0/1 scores with the given 2x2 counts (first index: baseline)."""
    base = np.array([1] * n11 + [1] * n10 + [0] * n01 + [0] * n00, dtype=float)
    cand = np.array([1] * n11 + [0] * n10 + [1] * n01 + [0] * n00, dtype=float)
    return base, cand


# A fixed, recorded sample set: 400 paired 0/1 outcomes and 400 paired continuous scores.
RNG = np.random.default_rng(20240611)
BASE_BIN = (RNG.random(400) < 0.7).astype(float)
CAND_BIN = np.where(RNG.random(400) < 0.15, 1 - BASE_BIN, BASE_BIN)
BASE_CONT = RNG.normal(-3.0, 1.0, 400)
CAND_CONT = BASE_CONT + RNG.normal(-0.05, 0.3, 400)


def test_textbook_exact_mcnemar():
    # Fagerland, Lydersen & Laake (2013), "The McNemar test for binary matched-pairs data: mid-p and
    # asymptotic are better than exact conditional", BMC Medical Research Methodology 13:91, Table 1:
    # airway hyper-responsiveness before/after stem cell transplantation in 21 children (Bentur et
    # al. 2009): [[1, 1], [7, 12]]. The paper gives the exact conditional p-value 0.070
    # (= 2 * P(Bin(8, 1/2) <= 1) = 18/256).
    before, after = _pairs(1, 1, 7, 12)
    result = gs.mcnemar(before, after)
    assert result.p_value == pytest.approx(18 / 256, abs=1e-12)
    assert round(result.p_value, 3) == 0.070
    assert (result.candidate_better, result.candidate_worse) == (7, 1)
    assert result.delta == pytest.approx(6 / 21)


def test_mcnemar_equals_statsmodels_and_scipy_on_the_recorded_set():
    result = gs.mcnemar(BASE_BIN, CAND_BIN)
    table = np.array(
        [
            [np.sum((BASE_BIN == 1) & (CAND_BIN == 1)), np.sum((BASE_BIN == 1) & (CAND_BIN == 0))],
            [np.sum((BASE_BIN == 0) & (CAND_BIN == 1)), np.sum((BASE_BIN == 0) & (CAND_BIN == 0))],
        ]
    )
    reference = sm_mcnemar(table, exact=True)
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-12)
    b, c = table[0, 1], table[1, 0]
    assert result.p_value == pytest.approx(stats.binomtest(int(c), int(b + c), 0.5).pvalue, rel=1e-12)
    assert (result.candidate_worse, result.candidate_better) == (b, c)
    # The interval of the difference: Wald with Agresti-Min's adjustment (1/2 added to each cell),
    # written out here from Agresti & Min (2005), eq. for the adjusted difference and its variance.
    n = len(BASE_BIN) + 2
    b_, c_ = b + 0.5, c + 0.5
    d_ = (c_ - b_) / n
    se = math.sqrt((b_ + c_) - (c_ - b_) ** 2 / n) / n
    assert result.ci_low == pytest.approx(d_ - 1.959963984540054 * se, rel=1e-12)
    assert result.ci_high == pytest.approx(d_ + 1.959963984540054 * se, rel=1e-12)
    assert result.ci_low <= result.delta <= result.ci_high


def test_bootstrap_ci_equals_scipy_bootstrap_on_the_recorded_set():
    result = gs.paired_bootstrap(BASE_CONT, CAND_CONT, alpha=0.05, iterations=3000, seed=7)
    reference = stats.bootstrap(
        (CAND_CONT - BASE_CONT,),
        np.mean,
        n_resamples=3000,
        batch=gs.bootstrap_batch(len(BASE_CONT), 3000),
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(7),
        vectorized=True,
    )
    assert result.ci_low == pytest.approx(reference.confidence_interval.low, rel=1e-12)
    assert result.ci_high == pytest.approx(reference.confidence_interval.high, rel=1e-12)
    assert result.standard_error == pytest.approx(reference.standard_error, rel=1e-9)
    assert result.delta == pytest.approx(np.mean(CAND_CONT - BASE_CONT))
    # The p-value reads the same resampled means: the share on the far side of 0, doubled.
    dist = reference.bootstrap_distribution
    far = min(np.sum(dist <= 0), np.sum(dist >= 0))
    assert result.p_value == pytest.approx(min(1.0, 2 * (far + 1) / 3001))
    assert (result.iterations, result.seed) == (3000, 7)


def test_bootstrap_is_reproducible_and_batches_do_not_change_it(monkeypatch):
    a = gs.paired_bootstrap(BASE_CONT, CAND_CONT, iterations=500, seed=3)
    assert a == gs.paired_bootstrap(BASE_CONT, CAND_CONT, iterations=500, seed=3)
    assert a != gs.paired_bootstrap(BASE_CONT, CAND_CONT, iterations=500, seed=4)
    monkeypatch.setattr(gs, "BOOTSTRAP_CELLS", 400 * 7)  # 7 resamples a batch, the last one short
    assert gs.paired_bootstrap(BASE_CONT, CAND_CONT, iterations=500, seed=3) == a


def test_benjamini_hochberg_equals_statsmodels():
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216]
    reject, adjusted = gs.benjamini_hochberg(p, 0.05)
    ref_reject, ref_adjusted, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    assert reject == list(ref_reject)
    assert adjusted == pytest.approx(list(ref_adjusted))
    # By hand: the largest k with p_(k) <= k/m * alpha is k=2 (0.008 <= 0.01; 0.039 > 0.015).
    assert reject == [True, True] + [False] * 8
    assert gs.benjamini_hochberg([], 0.05) == ([], [])


def test_no_discordant_pairs():
    base, cand = _pairs(40, 0, 0, 60)
    result = gs.mcnemar(base, cand)
    assert (result.p_value, result.delta) == (1.0, 0.0)
    # No discordant pair seen is not proof of none: the interval is 0 +- z/(n+2), not [0, 0].
    assert result.ci_high == pytest.approx(1.959963984540054 / 102) and result.ci_low == -result.ci_high
    # Nothing differed, yet an effect d needs d*n discordant pairs: the MDE is small but not 0.
    assert 0 < result.mde < 0.1


def test_all_equal_continuous_scores():
    scores = np.full(50, -2.5)
    result = gs.paired_bootstrap(scores, scores.copy(), iterations=200)
    assert (result.delta, result.ci_low, result.ci_high, result.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert result.mde == 0.0 and result.standard_error == 0.0


def test_constant_shift_is_significant_with_zero_spread():
    base = np.linspace(0, 1, 30)
    result = gs.paired_bootstrap(base, base - 0.1, iterations=200)
    assert result.delta == pytest.approx(-0.1)
    assert result.p_value == pytest.approx(2 / 201)
    assert result.ci_high == pytest.approx(-0.1)


def test_one_sample():
    result = gs.mcnemar(np.array([1.0]), np.array([0.0]))
    assert result.p_value == 1.0 and result.candidate_worse == 1
    assert math.isinf(result.mde)  # one pair cannot show anything
    boot = gs.paired_bootstrap(np.array([0.3]), np.array([0.5]), iterations=100)
    assert boot.delta == pytest.approx(0.2) and boot.ci_low == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("base", "cand", "message"),
    [
        ([1.0, float("nan")], [1.0, 0.0], "finite"),
        ([1.0, 0.0], [float("inf"), 0.0], "finite"),
        ([], [], "no samples"),
        ([1.0, 0.0], [1.0], "one length"),
    ],
)
def test_bad_input_is_refused(base, cand, message):
    with pytest.raises(ValueError, match=message):
        gs.paired_bootstrap(np.array(base), np.array(cand), iterations=100)
    with pytest.raises(ValueError, match=message):
        gs.mcnemar(np.array(base), np.array(cand))


def test_mcnemar_refuses_non_binary_scores():
    with pytest.raises(ValueError, match="0/1"):
        gs.mcnemar(np.array([0.5, 1.0]), np.array([1.0, 1.0]))


def _exact_power(n: int, psi: float, d: float, alpha: float = 0.05) -> float:
    """The exact McNemar test's power, summed from scratch: every number of discordant pairs D, and
    within it every split, rejected when scipy's binomtest p-value at 1/2 is below alpha."""
    q = (psi + d) / (2 * psi)
    total = 0.0
    for discordant in range(1, n + 1):
        weight = stats.binom.pmf(discordant, n, psi)
        if weight < 1e-18:
            continue
        rejected = [b for b in range(discordant + 1) if stats.binomtest(b, discordant, 0.5).pvalue < alpha]
        total += weight * float(np.sum(stats.binom.pmf(rejected, discordant, q)))
    return total


def _connor_mde(n: int, psi: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The MDE the gateway reported before: Connor's (1987) normal formula solved for d."""
    from scipy.optimize import brentq

    z_a, z_b = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    return brentq(lambda d: z_a * math.sqrt(psi) + z_b * math.sqrt(psi - d * d) - d * math.sqrt(n), 1e-9, psi)


def test_at_the_reported_mde_the_exact_test_has_the_power_asked():
    # Issue 27, item 5: Connor's MDE, put into the exact test, had power 0.77-0.79, not 0.80.
    n, discordant = 120, 24
    connor = _connor_mde(n, 0.2)
    assert 0.75 < _exact_power(n, 0.2, connor) < 0.8  # the old MDE was optimistic
    d = gs.mcnemar_mde(n, discordant, alpha=0.05, power=0.8)
    assert d > connor
    assert _exact_power(n, 0.2, d) >= 0.8 - 1e-9  # the exact power, summed independently, is there
    assert _exact_power(n, 0.2, d - 1e-4) < 0.8  # and d is the smallest such effect
    assert gs.mcnemar_power(n, 0.2, d, alpha=0.05) == pytest.approx(_exact_power(n, 0.2, d), abs=1e-12)
    # More samples detect less; more power needs more.
    assert gs.mcnemar_mde(1200, 240, alpha=0.05, power=0.8) < d
    assert gs.mcnemar_mde(n, discordant, alpha=0.05, power=0.95) > d


@pytest.mark.parametrize(("n", "psi", "d"), [(60, 0.3, 0.1), (200, 0.05, 0.04), (45, 0.9, 0.5)])
def test_exact_power_equals_the_sum_from_scratch(n, psi, d):
    assert gs.mcnemar_power(n, psi, d, alpha=0.05) == pytest.approx(_exact_power(n, psi, d), abs=1e-12)
    assert gs.mcnemar_power(n, psi, d, alpha=0.01) == pytest.approx(_exact_power(n, psi, d, 0.01), abs=1e-12)


def test_bootstrap_mde_from_the_standard_error():
    result = gs.paired_bootstrap(BASE_CONT, CAND_CONT, alpha=0.05, power=0.8, iterations=1000)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert result.mde == pytest.approx(z * result.standard_error)
    # The bootstrap SE is close to the analytic one of a paired mean.
    analytic = np.std(CAND_CONT - BASE_CONT, ddof=1) / math.sqrt(len(BASE_CONT))
    assert result.standard_error == pytest.approx(analytic, rel=0.1)


@pytest.mark.parametrize(
    ("value", "op", "bound", "holds"),
    [(0.6, ">=", 0.6, True), (0.6, ">", 0.6, False), (0.5, "<=", 0.6, True), (0.7, "<", 0.6, False)],
)
def test_thresholds(value, op, bound, holds):
    assert gs.threshold_holds(value, op, bound) is holds


def test_threshold_refuses_nan_and_unknown_operator():
    with pytest.raises(ValueError, match="finite"):
        gs.threshold_holds(float("nan"), ">=", 0.5)
    with pytest.raises(ValueError, match="unknown comparison"):
        gs.threshold_holds(0.5, "==", 0.5)


def test_mcnemar_mde_for_very_many_samples_is_small_but_found():
    # 10 million pairs, 1% discordant: Connor gives about 2.8 * sqrt(0.01 / 1e7) = 8.9e-5; with so many
    # pairs the exact test is nearly normal, so the exact MDE is close to it and just above.
    d = gs.mcnemar_mde(10_000_000, 100_000, alpha=0.05, power=0.8)
    connor = _connor_mde(10_000_000, 0.01)
    assert connor < d < connor * 1.01
    assert gs.mcnemar_power(10_000_000, 0.01, d, alpha=0.05) >= 0.8
