"""Model-free bounds on pass^k beyond the trials run (harness.stats.passk_bounds): valid for
task rates no model describes, pinned where the counts identify pass^k, wider with clusters.
Coverage by planted truth: benchmarks/prediction.py (results/prediction.json)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats.passk_bounds import moment_estimates, passk_bounds


def _always_and_never(rng, tasks: int) -> np.ndarray:
    u = rng.random(tasks)
    return np.where(u < 0.2, 1.0, np.where(u < 0.4, 0.0, rng.beta(2.0, 2.0, tasks)))


def test_the_moments_are_the_unbiased_pass_j():
    c, n = np.array([0.0, 2, 4, 3]), np.array([4.0, 4, 4, 4])
    m, cov = moment_estimates(c, n, 2, None)
    assert m[0] == pytest.approx(np.mean(c / 4))
    assert m[1] == pytest.approx(np.mean(c * (c - 1) / 12))
    assert cov.shape == (2, 2) and cov[0, 0] == pytest.approx(np.var(c / 4, ddof=1) / 4)


def test_a_truth_no_model_describes_is_inside_the_bounds():
    """Tasks that always and never pass beside a Beta: the beta-binomial's prediction of 0.153
    misses the true 0.211 (docs table); the bound holds it in every seeded run."""
    truth = 0.2 + 0.6 * np.prod((2 + np.arange(16)) / (4 + np.arange(16)))
    rng = np.random.default_rng(11)
    for _ in range(3):
        c = rng.binomial(4, _always_and_never(rng, 200))
        b = passk_bounds(c, 4, [16])
        assert b.lo[0] <= truth <= b.hi[0] and b.moments == 4
        assert 0.0 <= b.lo[0] < b.hi[0] <= 1.0


def test_more_trials_narrow_the_bounds_and_k_within_the_trials_is_pinned():
    rng = np.random.default_rng(12)
    p = rng.beta(1.224, 0.776, 400)
    wide = passk_bounds(rng.binomial(4, p), 4, [16])
    c8 = rng.binomial(8, p)
    narrow = passk_bounds(c8, 8, [16, 2])
    assert narrow.hi[0] - narrow.lo[0] < 0.75 * (wide.hi[0] - wide.lo[0])
    # pass^2 is measured, not extrapolated: the bound is the projection of the χ²₆ region on
    # its estimate, sqrt(12.59) standard errors either side
    m, cov = moment_estimates(c8.astype(float), np.full(400, 8.0), 6, None)
    half = np.sqrt(12.5916 * cov[1, 1])
    assert [narrow.lo[1], narrow.hi[1]] == pytest.approx([m[1] - half, m[1] + half], abs=2e-3)


def test_pass_at_k_bounds_rise_with_k_and_clusters_widen_them():
    rng = np.random.default_rng(13)
    rates = np.repeat(rng.beta(1.0, 2.0, 40), 5) + np.tile(np.linspace(-0.05, 0.05, 5), 40)
    c = rng.binomial(4, np.clip(rates, 0, 1))
    at = passk_bounds(c, 4, [8, 32], metric="pass_at")
    assert at.lo[1] >= at.lo[0] - 1e-9 and at.hi[1] >= at.hi[0] - 1e-9
    clustered = passk_bounds(c, 4, [8], metric="pass_at", clusters=np.repeat(np.arange(40), 5))
    assert clustered.hi[0] - clustered.lo[0] > at.hi[0] - at.lo[0]
    with pytest.raises(ValueError, match="metric"):
        passk_bounds(c, 4, [8], metric="pass_mean")


def test_counts_far_from_every_mixture_enlarge_the_region_and_too_even_ones_give_nan():
    """13/47/21/57/62 tasks at 0..4 passes of 4 (a logit-normal sample): no task-rate
    distribution has moments in the 95% region, so it is enlarged until one does."""
    c = np.repeat(np.arange(5), [13, 47, 21, 57, 62])
    b = passk_bounds(c, 4, [16])
    assert b.scale > 1.0 and 0.0 <= b.lo[0] < b.hi[0] <= 1.0
    even = passk_bounds(np.full(12, 3), 5, [16])  # less spread than binomial noise allows
    assert np.isnan(even.lo[0]) and np.isnan(even.hi[0])
