"""Cluster bootstrap: agreement with scipy, exact resampling semantics, seeds, speed."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pytest

from harness.stats import (
    cluster_bootstrap_ci,
    cluster_resample_counts,
    clustered_se,
    paired_cluster_bootstrap,
)


def _scipy_ci_from(replicates: np.ndarray, data: np.ndarray, method: str) -> tuple[float, float]:
    """scipy.stats.bootstrap's interval computed from *our* bootstrap distribution."""
    from scipy.stats import bootstrap

    prior = SimpleNamespace(bootstrap_distribution=replicates)
    res = bootstrap((data,), np.mean, n_resamples=0, bootstrap_result=prior, method=method, rng=0)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_interval_arithmetic_matches_scipy_exactly(method: str) -> None:
    # Unclustered case: each task is its own cluster, so the jackknife is scipy's.
    rng = np.random.default_rng(7)
    data = rng.exponential(1.0, 80)  # skewed, so BCa differs from percentile
    ours = cluster_bootstrap_ci(data, None, method=method, n_resamples=5000, rng=1)
    ref = _scipy_ci_from(ours.replicates, data, method)
    assert ours.ci == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_agrees_with_scipy_bootstrap_end_to_end(method: str) -> None:
    from scipy.stats import bootstrap

    rng = np.random.default_rng(11)
    data = rng.lognormal(0.0, 0.8, 120)
    ours = cluster_bootstrap_ci(data, None, method=method, n_resamples=20_000, rng=3)
    ref = bootstrap((data,), np.mean, n_resamples=20_000, method=method, rng=4)
    se = ours.se
    assert ours.ci[0] == pytest.approx(ref.confidence_interval.low, abs=0.06 * se)
    assert ours.ci[1] == pytest.approx(ref.confidence_interval.high, abs=0.06 * se)
    assert se == pytest.approx(float(ref.standard_error), rel=0.03)


def test_bca_shifts_right_for_right_skewed_mean() -> None:
    rng = np.random.default_rng(5)
    data = rng.lognormal(0.0, 1.2, 60)
    pct = cluster_bootstrap_ci(data, method="percentile", n_resamples=20_000, rng=0)
    bca = cluster_bootstrap_ci(data, method="bca", n_resamples=20_000, rng=0)
    np.testing.assert_array_equal(pct.replicates, bca.replicates)
    assert bca.ci[0] > pct.ci[0] and bca.ci[1] > pct.ci[1]


def test_counts_are_multinomial_resamples() -> None:
    batches = list(cluster_resample_counts(7, 1000, rng=0, batch_rows=64))
    counts = np.vstack(batches)
    assert counts.shape == (1000, 7)
    assert np.all(counts.sum(axis=1) == 7)
    assert counts.mean() == pytest.approx(1.0, abs=0.05)
    assert counts.var() == pytest.approx(6 / 7, rel=0.1)  # multinomial(7, 1/7) variance
    # the batch size does not change the draws
    again = np.vstack(list(cluster_resample_counts(7, 1000, rng=0, batch_rows=1000)))
    np.testing.assert_array_equal(counts, again)


def test_resamples_whole_clusters_ratio_of_sums() -> None:
    # Replicates must equal an explicit resample-the-clusters computation.
    rng = np.random.default_rng(1)
    n_tasks, n_clusters = 40, 6
    clusters = rng.integers(0, n_clusters, n_tasks)
    clusters[:n_clusters] = np.arange(n_clusters)  # every cluster non-empty
    values = rng.random(n_tasks)
    res = cluster_bootstrap_ci(values, clusters, n_resamples=200, rng=9)
    counts = np.vstack(list(cluster_resample_counts(n_clusters, 200, rng=9)))
    for b in range(200):
        picked = np.repeat(np.arange(n_clusters), counts[b])
        resampled = np.concatenate([values[clusters == c] for c in picked])
        assert res.replicates[b] == pytest.approx(resampled.mean(), rel=1e-12)
    assert res.estimate == pytest.approx(values.mean())
    assert res.n_clusters == n_clusters


def test_callable_paths_agree_with_fast_path() -> None:
    rng = np.random.default_rng(2)
    values = rng.random(30)
    clusters = np.repeat(np.arange(10), 3)
    fast = cluster_bootstrap_ci(values, clusters, n_resamples=300, rng=5, method="bca")
    vec = cluster_bootstrap_ci(
        values,
        clusters,
        lambda d, m: (m @ d) / m.sum(axis=1),
        n_resamples=300,
        rng=5,
        method="bca",
    )
    loop = cluster_bootstrap_ci(
        values, clusters, np.mean, n_resamples=300, rng=5, method="bca", vectorized=False
    )
    np.testing.assert_allclose(fast.replicates, vec.replicates, rtol=1e-12)
    np.testing.assert_allclose(fast.replicates, loop.replicates, rtol=1e-12)
    assert fast.ci == pytest.approx(vec.ci)
    assert fast.ci == pytest.approx(loop.ci)


def test_ratio_statistic_is_pooled_trial_rate() -> None:
    successes = np.array([3, 0, 5, 1])
    trials = np.array([5, 5, 10, 2])
    res = cluster_bootstrap_ci(np.column_stack([successes, trials]), statistic="ratio", rng=0)
    assert res.estimate == pytest.approx(9 / 22)


def test_weighted_mean() -> None:
    values = np.array([0.6] * 5 + [0.95] * 5)
    weights = np.array([0.2 / 5] * 5 + [0.8 / 5] * 5)
    res = cluster_bootstrap_ci(values, weights=weights, n_resamples=500, rng=0)
    assert res.estimate == pytest.approx(0.88)  # the estimands guide's stratified 88%


def test_seed_000_bootstrap_ci_of_model_a() -> None:
    # metrics guide: "bootstrap CI of A: (0.64, 0.72)" (percentile, questions resampled)
    a = np.array([1] * 340 + [0] * 160, dtype=float)
    res = cluster_bootstrap_ci(a, n_resamples=10_000, rng=0)
    assert (round(res.ci[0], 2), round(res.ci[1], 2)) == (0.64, 0.72)


def test_seed_002_resampling_whole_tasks() -> None:
    # estimands guide: 50 tasks x 4 rollouts (30 all pass, 15 all fail, 5 two of four): resampling
    # whole tasks gives about 52-77% where the trials-as-tasks Wilson interval says 58-71%.
    rates = np.array([1.0] * 30 + [0.0] * 15 + [0.5] * 5)
    res = cluster_bootstrap_ci(rates, n_resamples=20_000, rng=0)
    assert (round(100 * res.ci[0]), round(100 * res.ci[1])) == (52, 77)
    # the same with trial-level data and tasks as clusters (ratio of sums over trials)
    outcomes = np.repeat(rates, 4)
    tasks = np.repeat(np.arange(50), 4)
    trial_level = cluster_bootstrap_ci(outcomes, tasks, n_resamples=20_000, rng=0)
    np.testing.assert_allclose(trial_level.replicates, res.replicates, rtol=1e-12)
    # bootstrap SD approximates Miller's clustered SE
    assert trial_level.se == pytest.approx(clustered_se(outcomes, tasks), rel=0.03)


def test_paired_arms_share_resamples() -> None:
    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(20), 5)
    difficulty = rng.normal(0, 1.5, 20)[clusters]
    base = 1 / (1 + np.exp(-difficulty))
    cand = np.clip(base + 0.03 + rng.normal(0, 0.02, 100), 0, 1)
    res = paired_cluster_bootstrap(base, cand, clusters, n_resamples=4000, rng=8)
    np.testing.assert_allclose(
        res.difference.replicates, res.candidate.replicates - res.baseline.replicates
    )
    # each arm's own interval equals a separate call with the same seed (same clusters drawn)
    alone = cluster_bootstrap_ci(base, clusters, n_resamples=4000, rng=8)
    np.testing.assert_allclose(res.baseline.replicates, alone.replicates, rtol=1e-12)
    # pairing cancels shared difficulty: the difference is far tighter than either arm
    assert res.difference.se < 0.2 * res.baseline.se
    assert res.difference.ci[0] > 0
    assert res.difference.estimate == pytest.approx(cand.mean() - base.mean())
    bca = paired_cluster_bootstrap(base, cand, clusters, n_resamples=4000, rng=8, method="bca")
    assert bca.difference.method == "bca" and bca.difference.ci[0] < bca.difference.estimate


def test_seeded_and_reproducible() -> None:
    x = np.random.default_rng(0).random(50)
    one = cluster_bootstrap_ci(x, n_resamples=1000, rng=123)
    two = cluster_bootstrap_ci(x, n_resamples=1000, rng=np.random.default_rng(123))
    three = cluster_bootstrap_ci(x, n_resamples=1000, rng=124)
    np.testing.assert_array_equal(one.replicates, two.replicates)
    assert not np.array_equal(one.replicates, three.replicates)


def test_degenerate_and_invalid() -> None:
    res = cluster_bootstrap_ci(np.ones(10), n_resamples=100, rng=0, method="bca")
    assert res.ci == (1.0, 1.0)
    with pytest.raises(ValueError):
        cluster_bootstrap_ci(np.ones(10), method="basic")
    with pytest.raises(ValueError):
        cluster_bootstrap_ci(np.array([0.5, np.nan]))
    with pytest.raises(ValueError):
        cluster_bootstrap_ci(np.ones(3), clusters=[0, 1])
    with pytest.raises(ValueError):
        paired_cluster_bootstrap(np.ones(3), np.ones(4))


def test_scale_200_clusters_10000_tasks_10000_resamples() -> None:
    rng = np.random.default_rng(0)
    clusters = rng.integers(0, 200, 10_000)
    base = rng.random(10_000)
    cand = np.clip(base + rng.normal(0.01, 0.1, 10_000), 0, 1)
    start = time.perf_counter()
    res = paired_cluster_bootstrap(base, cand, clusters, n_resamples=10_000, rng=1, method="bca")
    elapsed = time.perf_counter() - start
    assert res.difference.n_resamples == 10_000 and res.difference.n_clusters == 200
    assert elapsed < 5.0  # typically ~0.2 s
