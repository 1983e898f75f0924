"""Beta-binomial: seed pass^k curves, posterior, fits and model-based prediction."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats import (
    beta_binomial_loglik,
    beta_from_mean_concentration,
    beta_pass_at_k,
    beta_pass_hat_k,
    fit_beta_binomial,
    mean_pass_hat_k,
    pass_hat_k,
    plugin_pass_hat_k,
    posterior_interval,
    posterior_prob_above,
    predict_pass_hat_k,
)


def test_seed_002_posterior_probability() -> None:
    # estimands guide: 194/200, uniform prior, posterior Beta(195, 7), P(p > 0.95) about 0.88
    assert round(posterior_prob_above(194, 200, 0.95), 2) == 0.88
    from scipy.stats import beta

    assert posterior_prob_above(194, 200, 0.95) == pytest.approx(beta(195, 7).sf(0.95))
    lo, hi = posterior_interval(194, 200)
    assert beta(195, 7).cdf(lo) == pytest.approx(0.025) and beta(195, 7).cdf(hi) == pytest.approx(
        0.975
    )
    # a stronger prior against the candidate lowers the probability
    assert posterior_prob_above(194, 200, 0.95, prior=(1, 20)) < 0.88


@pytest.mark.parametrize(
    ("concentration", "hat8", "at8"),
    [(200, 0.021, 0.999), (0.5, 0.405, 0.801)],
)
def test_seed_003_pass8_across_concentrations(
    concentration: float, hat8: float, at8: float
) -> None:
    # agent-evaluation guide: mean 0.612; as concentration falls from 200 to 0.5, pass^8 climbs from 0.021
    # to 0.405 while pass@8 falls from 0.999 to 0.801
    a, b = beta_from_mean_concentration(0.612, concentration)
    assert round(beta_pass_hat_k(a, b, 8), 3) == hat8
    assert round(beta_pass_at_k(a, b, 8), 3) == at8
    assert beta_pass_hat_k(a, b, 1) == pytest.approx(0.612)


def test_seed_003_spread_moves_metrics_apart() -> None:
    hats = [beta_pass_hat_k(*beta_from_mean_concentration(0.612, s), 8) for s in (200, 20, 2, 0.5)]
    ats = [beta_pass_at_k(*beta_from_mean_concentration(0.612, s), 8) for s in (200, 20, 2, 0.5)]
    assert hats == sorted(hats) and ats == sorted(ats, reverse=True)
    # agent-evaluation guide: all tasks at 0.612 -> pass^8 = 0.612^8 = 0.020
    assert round(float(plugin_pass_hat_k(0.612, 8)), 3) == 0.020


def test_seed_003_ninety_percent_agent_at_32() -> None:
    # agent-evaluation guide: mean 0.9, concentration 2: pass^32 = 0.53; every task at 0.9: 0.034
    a, b = beta_from_mean_concentration(0.9, 2.0)
    assert round(beta_pass_hat_k(a, b, 32), 2) == 0.53
    assert round(float(plugin_pass_hat_k(0.9, 32)), 3) == 0.034


def test_seed_003_planted_population_pass16() -> None:
    # agent-evaluation guide: Beta(1.224, 0.776): truth pass^16 = 0.121; the spread-blind guess
    # (pass^1)^16 says 0.0004, "off by a factor of 300"
    truth = beta_pass_hat_k(1.224, 0.776, 16)
    assert round(truth, 3) == 0.121
    naive = float(plugin_pass_hat_k(0.612, 16))
    assert round(naive, 4) == 0.0004
    assert 250 < truth / naive < 350


def test_beta_moments_match_integration() -> None:
    from scipy.integrate import quad
    from scipy.special import beta as beta_fn

    a, b = 1.7, 0.6

    def pdf(p: float) -> float:
        return p ** (a - 1) * (1 - p) ** (b - 1) / beta_fn(a, b)

    for k in (1, 3, 10):
        ref = quad(lambda p, k=k: p**k * pdf(p), 0, 1)[0]
        assert beta_pass_hat_k(a, b, k) == pytest.approx(ref, rel=1e-6)
        ref_at = 1 - quad(lambda p, k=k: (1 - p) ** k * pdf(p), 0, 1)[0]
        assert beta_pass_at_k(a, b, k) == pytest.approx(ref_at, rel=1e-6)
    # product form of agent-evaluation guide: prod (a+i)/(a+b+i)
    assert beta_pass_hat_k(a, b, 4) == pytest.approx(
        np.prod([(a + i) / (a + b + i) for i in range(4)])
    )


def _planted(tasks: int, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(1.224, 0.776, tasks)
    return rng.binomial(trials, p), p


def test_loglik_matches_scipy_and_mle_is_a_maximum() -> None:
    from scipy.stats import betabinom

    c, _ = _planted(400, 4, 0)
    n = np.full(c.size, 4)
    a, b = fit_beta_binomial(c, n)
    ll = beta_binomial_loglik(a, b, c, n)
    assert ll == pytest.approx(float(np.sum(betabinom.logpmf(c, n, a, b))), rel=1e-12)
    for da, db in [(1.05, 1), (0.95, 1), (1, 1.05), (1, 0.95), (1.05, 1.05), (0.95, 0.95)]:
        assert beta_binomial_loglik(a * da, b * db, c, n) < ll
    # against a generic optimizer on scipy's own likelihood
    from scipy.optimize import minimize

    res = minimize(
        lambda t: -np.sum(betabinom.logpmf(c, n, *np.exp(t))), x0=[0.0, 0.0], method="Nelder-Mead"
    )
    assert -res.fun == pytest.approx(ll, abs=1e-4)


def test_fits_recover_planted_parameters() -> None:
    c, _ = _planted(20_000, 4, 1)
    a, b = fit_beta_binomial(c, 4)
    am, bm = fit_beta_binomial(c, 4, method="moments")
    for fa, fb in ((a, b), (am, bm)):
        assert fa / (fa + fb) == pytest.approx(0.612, abs=0.01)
        assert fa + fb == pytest.approx(2.0, rel=0.15)


def test_moment_formula_by_hand() -> None:
    # agent-evaluation guide: m1 = pass^1, m2 = unbiased pass^2; s = (m1 - m2)/(m2 - m1^2)
    c = np.array([0, 1, 2, 3, 4, 4, 3, 4])
    n = np.full(8, 4)
    m1 = mean_pass_hat_k(n, c, 1)
    m2 = mean_pass_hat_k(n, c, 2)
    s = (m1 - m2) / (m2 - m1 * m1)
    a, b = fit_beta_binomial(c, n, method="moments")
    assert (a, b) == pytest.approx((m1 * s, (1 - m1) * s))


def test_no_overdispersion_gives_huge_concentration() -> None:
    rng = np.random.default_rng(3)
    c = rng.binomial(10, 0.6, 3000)  # every task at the same rate
    a, b = fit_beta_binomial(c, 10)
    assert a + b > 200
    assert beta_pass_hat_k(a, b, 8) == pytest.approx(0.6**8, rel=0.15)


def test_predict_pass16_from_four_trials() -> None:
    # agent-evaluation guide: with four trials per task, predict pass^16 (truth 0.121 for the planted Beta)
    c, p = _planted(2000, 4, 2)
    pred = predict_pass_hat_k(c, 4, [1, 2, 4, 16], n_boot=200, rng=0)
    assert pred.estimate[3] == pytest.approx(0.121, abs=0.02)
    assert np.all(pred.lo <= pred.estimate) and np.all(pred.estimate <= pred.hi)
    assert pred.lo[3] < 0.121 < pred.hi[3]
    # at k run, the model agrees with the unbiased estimator
    assert pred.estimate[1] == pytest.approx(float(np.mean(pass_hat_k(4, c, 2))), abs=0.01)
    # the moment fit and pass@k metric work too
    mom = predict_pass_hat_k(c, 4, [16], n_boot=50, rng=0, method="moments", metric="pass_at")
    assert mom.estimate[0] == pytest.approx(beta_pass_at_k(1.224, 0.776, 16), abs=0.02)


def test_predict_is_seeded_and_cluster_aware() -> None:
    c, _ = _planted(300, 4, 5)
    clusters = np.repeat(np.arange(30), 10)
    one = predict_pass_hat_k(c, 4, [8], n_boot=100, rng=1, clusters=clusters)
    two = predict_pass_hat_k(c, 4, [8], n_boot=100, rng=1, clusters=clusters)
    np.testing.assert_array_equal(one.replicates, two.replicates)
    with pytest.raises(ValueError):
        fit_beta_binomial(np.array([4, 4, 4]), 4)  # all passed: spread not identified
