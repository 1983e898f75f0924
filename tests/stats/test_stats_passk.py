"""Unbiased pass@k and pass^k: seed tables, brute force, unbiasedness and n = 100,000."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.stats import (
    mean_pass_at_k,
    mean_pass_hat_k,
    pass_at_k,
    pass_hat_k,
    per_task_rates,
    plugin_pass_at_k,
    plugin_pass_hat_k,
)


def test_seed_000_benchmark_table() -> None:
    # metrics guide: tasks (10, 3), (10, 10), (10, 0), (10, 7):
    # k=1: 0.500 / 0.500; k=3: 0.675 / 0.325; k=5: 0.729 / 0.271
    n = np.full(4, 10)
    c = np.array([3, 10, 0, 7])
    table = {1: (0.500, 0.500), 3: (0.675, 0.325), 5: (0.729, 0.271)}
    for k, (at, hat) in table.items():
        assert round(mean_pass_at_k(n, c, k), 3) == at
        assert round(mean_pass_hat_k(n, c, k), 3) == hat


def test_seed_000_and_002_single_task_numbers() -> None:
    # metrics guide: 7 passes of 10, pass^3 = 35/120 = 0.292
    assert pass_hat_k(10, 7, 3) == pytest.approx(35 / 120)
    assert round(pass_hat_k(10, 7, 3), 3) == 0.292
    # estimands guide: 3 passes of 10, unbiased pass@5 = 1 - 21/252 = 91.7%, plug-in 83.2%
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)
    assert round(100 * pass_at_k(10, 3, 5), 1) == 91.7
    assert round(100 * plugin_pass_at_k(0.3, 5), 1) == 83.2
    # estimands guide: at k = 1 the unbiased and plug-in estimates agree at 30%
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3) == plugin_pass_at_k(0.3, 1)
    # agent-evaluation guide: 3 successes in 4 trials, k = 2: 3/6 = 0.5 against plug-in 0.5625
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5)
    assert plugin_pass_hat_k(0.75, 2) == pytest.approx(0.5625)


def test_seed_002_plugin_bias_about_seven_points() -> None:
    # estimands guide: if the true rate were 30%, the plug-in's expected value falls about 7 points
    # short of the true pass@5 (10 samples per task).
    from scipy.stats import binom

    c = np.arange(11)
    weights = binom.pmf(c, 10, 0.3)
    expected_plugin = float(np.dot(weights, plugin_pass_at_k(c / 10, 5)))
    truth = 1 - 0.7**5
    assert round(100 * (truth - expected_plugin)) == 7
    # while the unbiased estimator's expectation is exactly the truth
    assert float(np.dot(weights, pass_at_k(10, c, 5))) == pytest.approx(truth, abs=1e-12)


def test_seed_002_heterogeneous_suite() -> None:
    # estimands guide: p = 0.75, k = 3: pass@3 about 98% (98.4%), pass^3 about 42% (42.2%)
    assert round(100 * plugin_pass_at_k(0.75, 3), 1) == 98.4
    assert round(100 * plugin_pass_hat_k(0.75, 3), 1) == 42.2
    # half the tasks always succeed, half succeed half the time: 93.8% and 56.3%
    p = np.array([1.0, 0.5])
    assert round(100 * float(np.mean(plugin_pass_at_k(p, 3))), 1) == 93.8
    # 0.5625 exactly; the seed rounds half up to 56.3
    assert math.floor(1000 * float(np.mean(plugin_pass_hat_k(p, 3))) + 0.5) / 10 == 56.3


def test_seed_003_task_rate_average_and_reliability() -> None:
    # agent-evaluation guide: one task passed 1 of 3 trials, another 3 of 3: score (1/3 + 1)/2 = 0.67
    rates, counts = per_task_rates(["a", "a", "a", "b", "b", "b"], [1, 0, 0, 1, 1, 1])
    assert round(float(rates.mean()), 2) == 0.67
    assert counts.tolist() == [3, 3]
    # agent-evaluation guide: 0.9^8 = 0.43; 0.612^8 = 0.020
    assert round(float(plugin_pass_hat_k(0.9, 8)), 2) == 0.43
    assert round(float(plugin_pass_hat_k(0.612, 8)), 3) == 0.020


def _brute(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    any_pass = sum(any(outcomes[i] for i in s) for s in subsets)
    all_pass = sum(all(outcomes[i] for i in s) for s in subsets)
    return Fraction(any_pass, len(subsets)), Fraction(all_pass, len(subsets))


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_matches_subset_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            at, hat = _brute(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(float(at), abs=1e-14)
            assert pass_hat_k(n, c, k) == pytest.approx(float(hat), abs=1e-14)


@pytest.mark.parametrize(("n", "k", "p"), [(10, 3, 0.3), (8, 8, 0.9), (20, 5, 0.55)])
def test_unbiased_in_expectation(n: int, k: int, p: float) -> None:
    from scipy.stats import binom

    c = np.arange(n + 1)
    w = binom.pmf(c, n, p)
    assert float(np.dot(w, pass_hat_k(n, c, k))) == pytest.approx(p**k, rel=1e-10)
    assert float(np.dot(w, pass_at_k(n, c, k))) == pytest.approx(1 - (1 - p) ** k, rel=1e-10)
    # the plug-ins are biased in opposite directions (agent-evaluation guide)
    assert float(np.dot(w, plugin_pass_hat_k(c / n, k))) > p**k
    assert float(np.dot(w, plugin_pass_at_k(c / n, k))) < 1 - (1 - p) ** k


@pytest.mark.parametrize(
    ("c", "k"),
    [
        (1, 1),
        (3, 5),
        (50_000, 10),
        (99_990, 5_000),
        (10, 5_000),
        (70_000, 1_000),
        (40_000, 300),
        (99_999, 1),
    ],
)
def test_stable_at_n_100000(c: int, k: int) -> None:
    n = 100_000
    ref_at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    ref_hat = Fraction(math.comb(c, k), math.comb(n, k))
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert math.isfinite(at) and math.isfinite(hat)
    assert at == pytest.approx(float(ref_at), rel=1e-12, abs=0)
    assert hat == pytest.approx(float(ref_hat), rel=1e-11, abs=0)


def test_elementwise_and_broadcast() -> None:
    n = np.array([10, 20, 100_000, 5])
    c = np.array([3, 0, 500, 5])
    out = pass_at_k(n, c, 5)
    assert isinstance(out, np.ndarray) and out.shape == (4,)
    for i in range(4):
        assert out[i] == pytest.approx(pass_at_k(int(n[i]), int(c[i]), 5), rel=1e-14)
    grid = pass_hat_k(10, np.arange(11)[:, None], np.arange(1, 11)[None, :])
    assert grid.shape == (11, 10)
    assert grid[7, 2] == pytest.approx(35 / 120)
    assert pass_at_k(10, 0, 3) == 0.0 and math.copysign(1, pass_at_k(10, 0, 3)) == 1


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)  # n < k
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)  # c > n
    with pytest.raises(ValueError):
        pass_hat_k(3.5, 1, 1)


@settings(deadline=None, max_examples=200)
@given(st.integers(1, 400), st.data())
def test_monotone_in_k(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert 0.0 <= hat <= c / n + 1e-12 <= at + 2e-12 <= 1.0 + 2e-12
    if k < n:
        assert pass_at_k(n, c, k + 1) >= at - 1e-12
        assert pass_hat_k(n, c, k + 1) <= hat + 1e-12
