"""Full-suite estimates from subsets: the metrics guide's numbers, and honest intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats import finite_population_se
from harness.stats.subset import (
    cluster_subset_estimate,
    stratified_subset_estimate,
    subset_estimate,
    task_means,
)


@pytest.mark.parametrize(
    ("n", "se"), [(50, 0.0658), (100, 0.0439), (200, 0.0269), (250, 0.0219), (500, 0.0)]
)
def test_metrics_guide_n500_p06(n: int, se: float) -> None:
    """N = 500, p ≈ 0.6: SE = sqrt(p(1 − p)/n · (N − n)/(N − 1)) (metrics guide)."""
    assert finite_population_se(0.6, n, 500) == pytest.approx(se, abs=5e-5)


def test_one_trial_random_subset_matches_the_guides_formula() -> None:
    """On binary one-trial scores the two-stage variance is the guide's up to n/(n − 1) and
    N/(N − 1) (the sample spread's ddof = 1 against p(1 − p))."""
    y = np.array([1.0] * 60 + [0.0] * 40)
    est = subset_estimate(y, 500)
    assert est.estimate == pytest.approx(0.6)
    guide = finite_population_se(0.6, 100, 500)
    assert est.se == pytest.approx(guide * math.sqrt(100 / 99 * 499 / 500), rel=1e-12)
    assert est.describe() == "full-suite estimate from 100 of 500 tasks (a random subset)"


def test_the_full_suite_keeps_only_the_trial_noise() -> None:
    """At n = N the design term vanishes; what is left is the fixed-suite variance."""
    rng = np.random.default_rng(0)
    rates = rng.uniform(0, 1, 40)
    scores = rng.binomial(5, np.repeat(rates, 1)) / 5.0
    within = scores * (1 - scores) / 4.0
    est = subset_estimate(scores, 40, within)
    assert est.se == pytest.approx(math.sqrt(within.mean() / 40))
    assert subset_estimate(scores, 40).se == 0.0


def test_task_means_gives_each_tasks_mean_and_its_trial_variance() -> None:
    names, means, within = task_means([1, 0, 1, 1, 1, 0], ["a", "a", "a", "b", "c", "c"])
    assert names == ["a", "b", "c"]
    assert means.tolist() == pytest.approx([2 / 3, 1.0, 0.5])
    assert within[0] == pytest.approx(np.var([1, 0, 1], ddof=1) / 3)
    assert math.isnan(within[1])


def _planted(rng: np.random.Generator, n_pop: int = 500) -> np.ndarray:
    return rng.beta(0.8, 0.6, n_pop)


def test_random_subset_interval_covers_the_full_suite_score() -> None:
    """Seeded sample of benchmarks/subset_coverage.py: 600 draws of 100 of 500 tasks, 3
    trials each; the interval covers the suite's true mean at 95% ± 2.5 points."""
    rng = np.random.default_rng(11)
    rates = _planted(rng)
    truth = rates.mean()
    hits = 0
    for _ in range(600):
        drawn = rng.choice(500, 100, replace=False)
        k = rng.binomial(3, rates[drawn])
        y = k / 3.0
        est = subset_estimate(y, 500, y * (1 - y) / 2.0)
        hits += est.lo <= truth <= est.hi
    assert 0.925 <= hits / 600 <= 0.975


def test_ignoring_the_correction_overcovers_at_large_fractions() -> None:
    """The correction matters: at 400 of 500 the uncorrected SE is 2.2x too wide."""
    y = np.array([1.0] * 240 + [0.0] * 160)
    corrected = subset_estimate(y, 500).se
    assert float(np.std(y, ddof=1)) / math.sqrt(400) / corrected == pytest.approx(
        math.sqrt(500 / 100), rel=1e-9
    )


def test_stratified_subset_weights_back_to_the_suites_mix() -> None:
    """Two strata drawn 50/50 from a 400/100 suite: the estimate is 0.8·ȳ₁ + 0.2·ȳ₂."""
    y = np.array([1.0] * 30 + [0.0] * 20 + [1.0] * 10 + [0.0] * 40)
    strata = ["easy"] * 50 + ["hard"] * 50
    est = stratified_subset_estimate(y, strata, {"easy": 400, "hard": 100})
    assert est.estimate == pytest.approx(0.8 * 0.6 + 0.2 * 0.2)
    v_easy = (1 - 50 / 400) * np.var(y[:50], ddof=1) / 50
    v_hard = (1 - 50 / 100) * np.var(y[50:], ddof=1) / 50
    assert est.se == pytest.approx(math.sqrt(0.64 * v_easy + 0.04 * v_hard))
    assert est.design == "stratified"


def test_stratified_subset_refuses_a_stratum_with_no_task() -> None:
    with pytest.raises(ValueError, match="no task drawn from stratum 'hard'"):
        stratified_subset_estimate([1.0, 0.0], ["easy", "easy"], {"easy": 10, "hard": 5})


def test_stratified_interval_covers() -> None:
    """Strata of very different difficulty, allocated proportionally: coverage 95% ± 2.5."""
    rng = np.random.default_rng(5)
    rates = np.concatenate([rng.beta(8, 2, 300), rng.beta(2, 8, 200)])
    labels = np.array(["easy"] * 300 + ["hard"] * 200)
    truth = rates.mean()
    hits = 0
    for _ in range(600):
        drawn = np.concatenate(
            [rng.choice(300, 30, replace=False), 300 + rng.choice(200, 20, replace=False)]
        )
        y = rng.binomial(1, rates[drawn]).astype(float)
        est = stratified_subset_estimate(y, labels[drawn], {"easy": 300, "hard": 200})
        hits += est.lo <= truth <= est.hi
    assert 0.925 <= hits / 600 <= 0.975


def test_cluster_subset_counts_clusters_not_tasks() -> None:
    """Whole clusters drawn: 10 of 50 clusters of 10 tasks, tasks within a cluster alike.
    The interval covers at 95% ± 3 points, where a task-level SE would undercover."""
    rng = np.random.default_rng(9)
    cluster_rate = rng.beta(1, 1, 50)
    rates = np.clip(np.repeat(cluster_rate, 10) + rng.normal(0, 0.05, 500), 0, 1)
    clusters = np.repeat(np.arange(50), 10)
    truth = rates.mean()
    hits = naive = 0
    for _ in range(600):
        picked = rng.choice(50, 10, replace=False)
        tasks = np.flatnonzero(np.isin(clusters, picked))
        y = rng.binomial(4, rates[tasks]) / 4.0
        est = cluster_subset_estimate(y, clusters[tasks], 500, 50, y * (1 - y) / 3.0)
        hits += est.lo <= truth <= est.hi
        task_level = subset_estimate(y, 500, y * (1 - y) / 3.0)
        naive += task_level.lo <= truth <= task_level.hi
    assert 0.92 <= hits / 600 <= 0.98
    assert naive / 600 < 0.8


def test_a_subset_where_every_task_passed_keeps_room_for_the_tasks_not_drawn() -> None:
    """20 of 40 drawn, all passed: the suite may still hold failing tasks. The bound is the
    most failures F with C(40 − F, 20)/C(40, 20) >= 2.5% (F = 4: 0.043; F = 5: 0.020)."""
    est = subset_estimate(np.ones(20), 40)
    assert est.estimate == 1.0 and est.hi == 1.0
    assert math.comb(36, 20) / math.comb(40, 20) >= 0.025 > math.comb(35, 20) / math.comb(40, 20)
    assert est.lo == pytest.approx(1 - 4 / 40)
    assert subset_estimate(np.zeros(20), 40).hi == pytest.approx(4 / 40)
    assert subset_estimate(np.ones(40), 40).lo == 1.0  # the whole suite: nothing unseen
