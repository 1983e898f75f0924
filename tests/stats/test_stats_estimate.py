"""The one interval method (stats.mean_estimate) against scipy, statsmodels, a direct matrix
CR2 / Imbens–Kolesár df computation and the seeds' worked numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats import (
    mean_ci_clustered,
    mean_estimate,
    paired_estimate,
    stratified_estimate,
    wilson_interval,
)
from harness.stats.estimate import cr2_ik, icc_anova

Z95 = 1.959963984540054


def test_equal_clusters_are_the_t_interval_on_cluster_means():
    from scipy import stats

    rng = np.random.default_rng(1)
    x = rng.random(48)
    cl = np.repeat(np.arange(12), 4)
    e = mean_estimate(x, cl, kind="score")
    means = x.reshape(12, 4).mean(axis=1)
    lo, hi = stats.t.interval(0.95, 11, loc=means.mean(), scale=stats.sem(means))
    assert (e.lo, e.hi) == pytest.approx((lo, hi), rel=1e-12)
    assert e.df == pytest.approx(11) and e.method_key == "cr2-ik"
    m = mean_ci_clustered(x, cl)  # the audited CR1 + t(C − 1) core
    assert (e.lo, e.hi) == pytest.approx((m.lo, m.hi), rel=1e-12)


def test_cr1_se_agrees_with_statsmodels_when_sizes_are_equal():
    import statsmodels.api as sm

    rng = np.random.default_rng(2)
    x = rng.random(60)
    cl = np.repeat(np.arange(15), 4)
    fit = sm.OLS(x, np.ones((60, 1))).fit(cov_type="cluster", cov_kwds={"groups": cl})
    # statsmodels' CR1 multiplies by (n − 1)/(n − k) too; for an intercept that is 1.
    assert mean_estimate(x, cl, kind="score").se == pytest.approx(float(fit.bse[0]), rel=1e-10)


def _dense_cr2_ik(x: np.ndarray, cl: np.ndarray) -> tuple[float, float]:
    """CR2 and its Imbens–Kolesár df for an unweighted mean, straight from the matrix
    definitions."""
    from scipy.linalg import fractional_matrix_power

    n = x.size
    ones = np.ones(n)
    h = np.outer(ones, ones) / n
    e = x - x.mean()
    g = int(cl.max()) + 1
    rho = icc_anova(x, cl)
    omega = (1 - rho) * np.eye(n) + rho * (cl[:, None] == cl[None, :])
    var = 0.0
    gs = []
    for c in range(g):
        idx = np.flatnonzero(cl == c)
        a = fractional_matrix_power(np.eye(idx.size) - h[np.ix_(idx, idx)], -0.5).real
        score = ones[idx] @ a @ e[idx] / n
        var += score**2
        # g_c: the linear map y -> score_c, so V = Σ (g_c' y)² and y's covariance is Ω
        row = np.zeros(n)
        row[idx] = ones[idx] @ a / n
        gs.append((np.eye(n) - h).T @ row)
    gmat = np.array(gs)
    k = gmat @ omega @ gmat.T
    df = np.trace(k) ** 2 / np.sum(k * k)
    return math.sqrt(var), min(g - 1.0, df)


def test_cr2_and_bell_mccaffrey_df_match_the_matrix_definition():
    rng = np.random.default_rng(3)
    sizes = [1, 2, 2, 3, 5, 8, 13]
    cl = np.repeat(np.arange(len(sizes)), sizes)
    x = rng.random(cl.size) + 0.3 * rng.normal(size=len(sizes))[cl]
    se, df = cr2_ik(x, cl, np.ones(cl.size))
    ref_se, ref_df = _dense_cr2_ik(x, cl)
    assert se == pytest.approx(ref_se, rel=1e-10)
    assert df == pytest.approx(ref_df, rel=1e-8)
    assert df < len(sizes) - 1  # unequal sizes cost degrees of freedom


def test_no_variation_is_a_bound_never_zero_width():
    # an A/A arm that agreed on all 20 tasks: the bound is Wilson's at 0 of 20
    e = paired_estimate(np.ones(20), np.ones(20))
    u = Z95**2 / (20 + Z95**2)
    assert e.method_key == "no-variation" and e.hi - e.lo > 0
    assert (e.lo, e.hi) == pytest.approx((-u, u))
    assert e.hi == pytest.approx(wilson_interval(0, 20)[1])
    full = mean_estimate(np.ones(30), np.repeat(np.arange(10), 3), kind="rate")
    assert full.lo == pytest.approx(wilson_interval(10, 10)[0]) and full.hi == 1.0
    assert full.warning


def test_one_cluster_shows_the_whole_range_with_a_warning():
    e = paired_estimate([0.5, 0.5, 0.5], [0.25, 0.75, 1.0], ["c", "c", "c"])
    assert e.n_units == 1 and (e.lo, e.hi) == (-1.0, 1.0) and "one independent" in e.warning


def test_few_clusters_warn_and_tasks_get_wilson():
    e = mean_estimate(np.r_[np.ones(10), np.zeros(8)], np.repeat(np.arange(6), 3))
    assert "only 6 clusters" in e.warning
    x = np.r_[np.ones(42), np.zeros(8)]  # eval-harness guide: 42/50
    w = mean_estimate(x)
    assert (w.lo, w.hi) == pytest.approx(wilson_interval(42, 50)) and w.method_key == "wilson"


def test_stratified_reduces_to_seed_002_with_independent_tasks():
    # estimands guide: joins 120/200, lookups 95/100, production shares 20% / 80% → 88%
    rates = np.r_[np.ones(120), np.zeros(80), np.ones(95), np.zeros(5)]
    strata = np.r_[np.full(200, "join"), np.full(100, "lookup")]
    weights = np.r_[np.full(200, 0.2 / 200), np.full(100, 0.8 / 100)]
    e = mean_estimate(rates, weights=weights, strata=strata)
    est, se = stratified_estimate([0.6, 0.95], [200, 100], [0.2, 0.8])
    assert e.estimate == pytest.approx(0.88) == pytest.approx(est)
    assert e.se == pytest.approx(se * math.sqrt(300 / 299), rel=1e-9)


def test_quantile_interval_uses_the_binomial_order_statistics():
    from harness.stats import quantile_interval

    x = np.arange(1.0, 101.0)  # values 1..100: the k-th order statistic is k
    est, lo, hi = quantile_interval(x, 0.5)
    assert est == pytest.approx(50.5) and (lo, hi) == (40.0, 61.0)  # the textbook ranks
    _, lo95, hi95 = quantile_interval(x, 0.95)
    assert lo95 < 95.5 < hi95 and hi95 == 100.0


def test_binom_ppf_equals_scipy_stats():
    """The scipy.special-only inverse gives scipy.stats.binom.ppf's k on a grid of n, p and
    levels, including the two-sided 95% and 99% ends used by quantile_interval. At an exact
    tie (P(X <= k) equals the level, as for the median of an odd symmetric binomial) float
    rounding picks k or k + 1 in either library; both are then the smallest k within 1e-9."""
    from scipy.special import bdtr
    from scipy.stats import binom

    from harness.stats.intervals import binom_ppf

    rng = np.random.default_rng(5)
    levels = [0.005, 0.025, 0.05, 0.5, 0.95, 0.975, 0.995, *rng.uniform(0, 1, 20)]
    for n in (1, 2, 3, 7, 20, 100, 1000, 12345):
        for p in (0.01, 0.05, 0.25, 0.5, 0.95, 0.99, *rng.uniform(0, 1, 5)):
            for level in levels:
                ours, theirs = binom_ppf(level, n, p), int(binom.ppf(level, n, p))
                if ours != theirs:  # only at a tie, and only by one
                    assert abs(ours - theirs) == 1, (level, n, p)
                    assert abs(bdtr(min(ours, theirs), n, p) - level) < 1e-9, (level, n, p)


def test_as_dict_carries_every_field_of_the_estimate():
    """``as_dict`` spells its fields out (typed); a field added to ``Estimate`` must reach it."""
    import dataclasses

    e = mean_estimate(np.array([1.0, 0.0, 1.0, 1.0]), np.array(["a", "b", "c", "c"]))
    assert list(e.as_dict().items()) == list(dataclasses.asdict(e).items())
