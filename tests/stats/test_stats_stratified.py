"""Stratified reweighting, Kish effective n, finite population correction (metrics guide and estimands guide)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats import (
    finite_population_se,
    kish_effective_n,
    stratified_estimate,
    stratum_variance_shares,
)


def test_seed_002_sqlagent_suite() -> None:
    # estimands guide: joins 120/200 (60%), lookups 95/100 (95%); production 20% joins, 80% lookups
    est, se = stratified_estimate([0.60, 0.95], [200, 100], [0.2, 0.8])
    assert round(100 * est) == 88
    assert se == pytest.approx(math.sqrt(0.04 * 0.24 / 200 + 0.64 * 0.0475 / 100))
    # "the lookups ... contribute 86% of the variance"
    shares = stratum_variance_shares([0.60, 0.95], [200, 100], [0.2, 0.8])
    assert round(100 * shares[1]) == 86
    # the unweighted figure describes a fictional user base: 215/300
    assert round(100 * 215 / 300, 1) == 71.7
    # weights are normalized
    assert stratified_estimate([0.60, 0.95], [200, 100], [1, 4]) == pytest.approx((est, se))


def test_seed_002_kish_effective_n() -> None:
    # estimands guide: each join weighs 0.3 and each lookup 2.4: n_eff about 152 of 300
    w = np.r_[np.full(200, 0.3), np.full(100, 2.4)]
    assert round(kish_effective_n(w)) == 152
    assert kish_effective_n(np.ones(300)) == pytest.approx(300)
    # the weights are the population share over the suite share
    join_weight, lookup_weight = 0.2 / (200 / 300), 0.8 / (100 / 300)
    assert (join_weight, lookup_weight) == pytest.approx((0.3, 2.4))


def test_stratified_se_by_simulation() -> None:
    rng = np.random.default_rng(0)
    p, n, w = np.array([0.6, 0.95]), np.array([200, 100]), np.array([0.2, 0.8])
    draws = rng.binomial(n, p, (20_000, 2)) / n
    estimates = draws @ w
    _, se = stratified_estimate(p, n, w)
    assert estimates.std() == pytest.approx(se, rel=0.03)


def test_seed_000_finite_population() -> None:
    # metrics guide: SE = sqrt(p(1-p)/n * (N-n)/(N-1)); zero when the whole benchmark is run
    assert finite_population_se(0.6, 500, 500) == 0.0
    assert finite_population_se(0.6, 100, 500) == pytest.approx(math.sqrt(0.24 / 100 * 400 / 499))
    assert finite_population_se(0.6, 100, 500) < math.sqrt(0.24 / 100)
    # check against sampling without replacement from a fixed 500-task benchmark
    rng = np.random.default_rng(1)
    bench = np.r_[np.ones(300), np.zeros(200)]
    means = [rng.choice(bench, 100, replace=False).mean() for _ in range(10_000)]
    assert float(np.std(means)) == pytest.approx(finite_population_se(0.6, 100, 500), rel=0.04)


def test_invalid() -> None:
    with pytest.raises(ValueError):
        stratified_estimate([0.5], [0], [1.0])
    with pytest.raises(ValueError):
        finite_population_se(0.5, 600, 500)
