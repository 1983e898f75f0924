"""The fixed-suite interval (harness.stats.fixed_suite): its formula, its edge cases, and its
coverage of the suite's own mean, where the superpopulation interval over-covers."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats import mean_estimate
from harness.stats.fixed_suite import fixed_suite_bounds, fixed_suite_estimate


def test_the_variance_is_the_within_task_binomial_variance():
    c, n = np.array([3, 5, 0, 2]), np.array([5, 5, 5, 4])
    p = c / n
    s2 = n / (n - 1) * p * (1 - p)
    e = fixed_suite_estimate(c, n)
    assert e.estimate == pytest.approx(p.mean())
    assert e.se == pytest.approx(np.sqrt(np.sum(s2 / n)) / 4)
    v = s2 / n
    assert e.df == pytest.approx(v.sum() ** 2 / np.sum(v * v / (n - 1)), rel=1e-3)
    assert e.lo < e.estimate < e.hi and e.method_key == "fixed-suite"


def test_deterministic_tasks_get_a_bound_not_zero_width():
    e = fixed_suite_estimate([5, 0, 5], [5, 5, 5])
    assert e.lo < e.estimate < e.hi and e.warning and "bound" in e.warning
    one = fixed_suite_estimate([1, 0, 1, 1], [1, 1, 1, 1])
    assert "Wilson" in one.method and one.lo < 0.75 < one.hi


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="one pass count"):
        fixed_suite_estimate([3], [2])


@pytest.mark.parametrize("tasks, trials", [(40, 3), (100, 5), (20, 10)])
def test_it_covers_the_suites_own_mean(tasks, trials):
    rng = np.random.default_rng(tasks + trials)
    p = np.where(rng.random(tasks) < 0.4, 1.0, rng.beta(2, 1.5, tasks))  # some always pass
    reps = 2000
    c = rng.binomial(trials, np.broadcast_to(p, (reps, tasks)))
    b = fixed_suite_bounds(c, np.full(tasks, trials), np.ones(tasks), 0.95)
    covered = np.mean((b.lo <= p.mean()) & (p.mean() <= b.hi))
    assert 0.93 <= covered <= 0.975, covered  # ± 0.5% at 2,000 replications
    assert np.mean(b.hi < p.mean()) <= 0.04 and np.mean(b.lo > p.mean()) <= 0.04


def test_the_superpopulation_interval_over_covers_the_fixed_suite():
    rng = np.random.default_rng(2)
    p = rng.beta(2, 1, 40)
    widths = []
    for _ in range(20):
        c = rng.binomial(4, p)
        f, s = fixed_suite_estimate(c, np.full(40, 4)), mean_estimate(c / 4)
        widths.append((s.hi - s.lo) / (f.hi - f.lo))
    assert np.median(widths) > 1.3
