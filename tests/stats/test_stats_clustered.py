"""Clustered standard errors, effective clusters and design effects (metrics guide, estimands guide and agent-evaluation guide)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from harness.stats import (
    clustered_se,
    design_effect,
    effective_clusters,
    effective_clusters_from_sizes,
    effective_sample_size,
    mean_ci_clustered,
    wilson_interval,
)


def _seed_000_passages() -> tuple[list[int], list[int]]:
    """The metrics guide's data-generating process: 100 passages x 5 questions, each passage easy or
    hard, drawn with Python's Mersenne Twister seeded 1 in the seed's order of calls."""
    rng = random.Random(1)
    scores: list[int] = []
    clusters: list[int] = []
    for c in range(100):
        p_passage = rng.choice([0.1, 0.9])
        for _ in range(5):
            scores.append(1 if rng.random() < p_passage else 0)
            clusters.append(c)
    return scores, clusters


def test_seed_000_naive_vs_clustered_se() -> None:
    # metrics guide toolkit output: "naive SE: 0.0223  clustered SE: 0.0427"
    scores, clusters = _seed_000_passages()
    naive = clustered_se(scores, None, small_sample=True)  # SD(ddof=1)/sqrt(n)
    assert round(naive, 4) == 0.0223
    assert round(clustered_se(scores, clusters), 4) == 0.0427
    assert naive == pytest.approx(np.std(scores, ddof=1) / math.sqrt(len(scores)), rel=1e-12)


def test_miller_formula_by_hand() -> None:
    s = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    cl = np.array([0, 0, 0, 1, 1, 2])
    m = s.mean()
    by_hand = math.sqrt(sum(float(np.sum(s[cl == c] - m)) ** 2 for c in range(3))) / 6
    assert clustered_se(s, cl) == pytest.approx(by_hand)
    assert clustered_se(s, cl, small_sample=True) == pytest.approx(by_hand * math.sqrt(3 / 2))
    # labels of any type
    assert clustered_se(s, ["x", "x", "x", "y", "y", "z"]) == pytest.approx(by_hand)


def test_agrees_with_statsmodels_cluster_robust_mean() -> None:
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    clusters = rng.integers(0, 25, 400)
    effect = rng.normal(0, 1, 25)[clusters]
    y = (rng.random(400) < 1 / (1 + np.exp(-effect))).astype(float)
    fit = sm.OLS(y, np.ones((400, 1))).fit(cov_type="cluster", cov_kwds={"groups": clusters})
    # statsmodels' default correction for one regressor is exactly C/(C-1)
    assert clustered_se(y, clusters, small_sample=True) == pytest.approx(fit.bse[0], rel=1e-10)
    w = rng.uniform(0.5, 2.0, 400)
    wfit = sm.WLS(y, np.ones((400, 1)), weights=w).fit(
        cov_type="cluster", cov_kwds={"groups": clusters}
    )
    assert clustered_se(y, clusters, small_sample=True, weights=w) == pytest.approx(
        wfit.bse[0], rel=1e-10
    )


def test_seed_003_effective_clusters() -> None:
    # agent-evaluation guide: three tasks from one repository and one from another: 16/10 = 1.6
    assert effective_clusters(["r1", "r1", "r1", "r2"]) == pytest.approx(1.6)
    # agent-evaluation guide: SWE-bench Verified, 231 Django, 75 SymPy, 194 across ten others:
    # sum of squares 64,600 and J_eff = 250,000/64,600 = 3.9
    sizes = np.array([231, 75, 44, 34, 32, 22, 22, 19, 10, 8, 2, 1])
    assert sizes.sum() == 500 and int(np.dot(sizes, sizes)) == 64_600
    assert round(effective_clusters_from_sizes(sizes), 1) == 3.9
    assert effective_clusters_from_sizes(np.ones(7)) == pytest.approx(7.0)


def test_seed_000_design_effect() -> None:
    # metrics guide: 5 questions per passage with rho = 0.5: variance x3, SE x1.73
    assert design_effect(5, 0.5) == pytest.approx(3.0)
    assert round(math.sqrt(design_effect(5, 0.5)), 2) == 1.73


def _seed_002_rollouts() -> tuple[np.ndarray, np.ndarray]:
    # estimands guide: 50 tasks x 4 rollouts: 30 pass all four, 15 fail all four, 5 pass two of four
    per_task = [[1, 1, 1, 1]] * 30 + [[0, 0, 0, 0]] * 15 + [[1, 1, 0, 0]] * 5
    outcomes = np.array(per_task, dtype=float).ravel()
    tasks = np.repeat(np.arange(50), 4)
    return outcomes, tasks


def test_seed_002_trials_cluster_within_tasks() -> None:
    outcomes, tasks = _seed_002_rollouts()
    assert outcomes.sum() == 130 and round(outcomes.mean(), 2) == 0.65
    # the naive interval over 200 trials: "65% (95% Wilson CI 58-71%, n = 200)"
    lo, hi = wilson_interval(130, 200)
    assert (round(100 * lo), round(100 * hi)) == (58, 71)
    # resampling whole tasks gives "about 52-77%" (reproduced with the cluster bootstrap in
    # test_stats_bootstrap); the normal-theory clustered intervals land within half a point:
    # Miller's SE gives 52.5-77.5%, with the C/(C-1) correction 52.4-77.6%
    se = clustered_se(outcomes, tasks)
    assert 0.52 < 0.65 - 1.96 * se < 0.53 and 0.77 < 0.65 + 1.96 * se < 0.78
    ci = mean_ci_clustered(outcomes, tasks, distribution="normal")
    assert 0.52 < ci.lo < 0.53 and 0.77 < ci.hi < 0.78
    # "nearly twice as wide"
    naive_se = clustered_se(outcomes, None, small_sample=True)
    assert 1.7 < ci.se / naive_se < 2.0
    # "the 200 trials carry about as much information as 55 independent tasks"
    assert round(effective_sample_size(outcomes, tasks)) == 55


def test_mean_ci_clustered_t_vs_normal() -> None:
    rng = np.random.default_rng(0)
    x = rng.random(60)
    cl = np.repeat(np.arange(6), 10)
    t_ci = mean_ci_clustered(x, cl)
    z_ci = mean_ci_clustered(x, cl, distribution="normal")
    assert t_ci.estimate == pytest.approx(x.mean())
    assert t_ci.se == pytest.approx(clustered_se(x, cl, small_sample=True))
    assert t_ci.critical == pytest.approx(2.5706, abs=1e-4)  # t quantile, 5 df
    assert z_ci.critical == pytest.approx(1.95996, abs=1e-5)
    assert t_ci.hi - t_ci.lo > z_ci.hi - z_ci.lo
    assert t_ci.n_clusters == 6 and t_ci.n == 60
    with pytest.raises(ValueError):
        mean_ci_clustered(x, np.zeros(60))


def test_seed_003_repository_simulation() -> None:
    # agent-evaluation guide: SWE-bench-shaped clusters (12 repositories), repository log-odds SD 0.8, task
    # SD 1.0, base log-odds 1.4 (mean score about 75%), 2,000 draws: the independent-task SE
    # says 1.9 points, the clustered SE about 4.2, the true spread about 6.4.
    from scipy.special import expit

    sizes = np.array([231, 75, 44, 34, 32, 22, 22, 19, 10, 8, 2, 1])
    cl = np.repeat(np.arange(12), sizes)
    rng = np.random.default_rng(2024)
    draws = 2000
    u = rng.normal(0, 0.8, (draws, 12))
    e = rng.normal(0, 1.0, (draws, 500))
    x = (rng.random((draws, 500)) < expit(1.4 + u[:, cl] + e)).astype(float)
    scores = x.mean(axis=1)
    naive = np.array([clustered_se(row, None, small_sample=True) for row in x])
    clus = np.array([clustered_se(row, cl, small_sample=True) for row in x])
    assert abs(scores.mean() - 0.75) < 0.02
    assert round(100 * naive.mean(), 1) == pytest.approx(1.9, abs=0.1)
    assert 100 * clus.mean() == pytest.approx(4.2, abs=0.3)
    assert 100 * scores.std() == pytest.approx(6.4, abs=0.5)
    # the clustered SE is closer to the truth but still low with 12 unequal clusters
    assert naive.mean() < clus.mean() < scores.std()
