"""pass^k beyond the trials run (harness.stats.passk_predict): shares of tasks that always or
never pass are fitted and added when the counts show them, the plain beta-binomial otherwise,
and the prediction is withheld with its reason when it cannot be checked or fails its check. Coverage by planted
truth: benchmarks/prediction.py (results/prediction.json)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats.mixture_fit import best_fit
from harness.stats.passk_predict import predict_pass_k


def _counts(rng, tasks: int, trials: int, always: float) -> np.ndarray:
    p = np.where(rng.random(tasks) < always, 1.0, rng.beta(2.0, 3.0, tasks))
    return rng.binomial(trials, p)


def test_the_mixture_recovers_the_always_pass_share():
    rng = np.random.default_rng(3)
    c = _counts(rng, 4000, 8, 0.3)
    cells, idx = np.unique(c, return_inverse=True)
    fit = best_fit(
        cells.astype(float), np.full(cells.size, 8.0), np.bincount(idx), always_pass=True
    )
    assert float(fit.pi[0]) == pytest.approx(0.3, abs=0.03)
    assert float(fit.a[0] / (fit.a[0] + fit.b[0])) == pytest.approx(0.4, abs=0.04)


def test_the_zero_and_one_inflated_fit_recovers_both_shares():
    rng = np.random.default_rng(3)
    u = rng.random(4000)
    p = np.where(u < 0.2, 1.0, np.where(u < 0.4, 0.0, rng.beta(2.0, 2.0, 4000)))
    cells, idx = np.unique(rng.binomial(8, p), return_inverse=True)
    w = np.bincount(idx)
    fit = best_fit(
        cells.astype(float), np.full(cells.size, 8.0), w, always_pass=True, never_pass=True
    )
    assert float(fit.pi[0]) == pytest.approx(0.2, abs=0.03)
    assert float(fit.pi0[0]) == pytest.approx(0.2, abs=0.03)
    assert float(fit.a[0] / (fit.a[0] + fit.b[0])) == pytest.approx(0.5, abs=0.05)
    one = best_fit(cells.astype(float), np.full(cells.size, 8.0), w, always_pass=True)
    assert float(fit.loglik[0]) > float(one.loglik[0]) and float(one.pi0[0]) == 0.0


def test_tasks_that_always_and_never_pass_are_predicted_with_both_shares():
    rng = np.random.default_rng(8)
    u = rng.random(400)
    p = np.where(u < 0.2, 1.0, np.where(u < 0.4, 0.0, rng.beta(2.0, 2.0, 400)))
    e = predict_pass_k(rng.binomial(6, p), 6, [16], n_boot=100, rng=1)
    assert e.withheld is None and e.model == "beta-binomial with always- and never-pass shares"
    assert e.lo is not None and e.hi is not None and e.lo[0] <= 0.211 <= e.hi[0]
    assert e.never_pass == pytest.approx(0.2, abs=0.06) and e.check_df == 2


def test_some_tasks_always_passing_are_predicted_with_their_share():
    rng = np.random.default_rng(4)
    c = _counts(rng, 300, 5, 0.3)
    e = predict_pass_k(c, 5, [16, 32], n_boot=100, rng=1)
    assert e.withheld is None and e.always_pass == pytest.approx(0.3, abs=0.07)
    truth = 0.3 + 0.7 * np.exp(np.sum(np.log((2 + np.arange(16)) / (5 + np.arange(16)))))
    assert e.lo is not None and e.hi is not None and e.estimate is not None
    assert e.lo[0] <= truth <= e.hi[0] and e.estimate[1] > 0.2  # a plain Beta falls toward 0
    hat, _, _ = e.curve([16], "pass_hat")
    at, _, _ = e.curve([16], "pass_at")
    assert at[0] > hat[0] and hat[0] == pytest.approx(e.estimate[0])


def test_beta_rates_get_no_share_to_speak_of():
    """Beta(2, 2) rates: a share may be added (the tests that add one are loose, at 20%), but
    it is small and the interval holds the true pass^16, B(18, 2)/B(2, 2) = 6/(18·19)."""
    rng = np.random.default_rng(5)
    c = rng.binomial(4, rng.beta(2.0, 2.0, 300))
    e = predict_pass_k(c, 4, [16], n_boot=50, rng=1)
    assert e.withheld is None and e.lo is not None and e.hi is not None
    assert (e.always_pass or 0) < 0.1 and (e.never_pass or 0) < 0.1
    assert e.lo[0] <= 6 / (18 * 19) <= e.hi[0]


@pytest.mark.parametrize(
    "c, n, reason",
    [
        (np.array([1, 2, 3]), 3, "needs at least 10 tasks"),
        (np.tile([0, 1, 2], 10), 2, "needs at least 3 trials per task"),
        (np.full(12, 3), 5, "does not fit the per-task pass counts"),
        (np.tile([3, 3, 3, 3, 0, 1, 2, 1], 10), 3, "cannot be checked: run 4 or more"),
    ],
)
def test_a_prediction_that_cannot_be_trusted_is_withheld_with_its_reason(c, n, reason):
    e = predict_pass_k(c, n, [16], n_boot=20, rng=1)
    assert e.estimate is None and e.withheld is not None and reason in e.withheld
    with pytest.raises(ValueError, match="no prediction"):
        e.curve([16])
    if e.counts is None:  # too few tasks: not even a model-free bound
        assert e.bound_lo is None and reason.startswith("needs at least 10")
    else:  # the model-free bound holds what the counts support
        assert e.bound_lo is not None and e.bound_hi is not None
        if np.isnan(e.bound_lo[0]):  # counts less spread than any task rates could give
            assert "does not fit" in reason and np.isnan(e.bound_hi[0])
        else:
            assert 0.0 <= e.bound_lo[0] <= e.bound_hi[0] <= 1.0


def test_the_model_free_bound_is_reported_beside_the_model():
    """Tasks that always and never pass beside a Beta(2, 2): the beta-binomial (rarely
    rejected at 4 trials) predicts too low; the bound holds the true pass^16 of 0.211."""
    rng = np.random.default_rng(6)
    u = rng.random(200)
    p = np.where(u < 0.2, 1.0, np.where(u < 0.4, 0.0, rng.beta(2.0, 2.0, 200)))
    e = predict_pass_k(rng.binomial(4, p), 4, [16], n_boot=50, rng=1)
    assert e.bound_lo is not None and e.bound_hi is not None
    assert e.bound_lo[0] <= 0.211 <= e.bound_hi[0]
    if e.estimate is not None:
        assert e.bound_lo[0] <= e.estimate[0] <= e.bound_hi[0]
    lo, hi = e.bounds([16])
    assert (lo[0], hi[0]) == (e.bound_lo[0], e.bound_hi[0])
