"""2PL anchors: the metrics guide's worked example, parameter recovery against an
independent fit, tasks every system passes or fails, and anchor choice."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from harness.stats.irt import (
    ability,
    fit_2pl,
    information,
    midrange,
    most_informative,
    p2pl,
    predicted_score,
)

TIERS = np.repeat([-2.0, -1.0, 0.0, 1.0, 2.0], 100)
ANCHOR_B = [-2.0, -1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0]
ANCHOR_Y = [1, 1, 1, 1, 1, 1, 0, 1, 0, 0]


def test_metrics_guide_ten_anchors() -> None:
    """500 tasks in five tiers, a = 1.5; 7 of 10 anchors passed (70% raw): θ = 0.83
    (SE 0.56), predicted 65.8%, 95% range 45.1% to 84.1% (metrics guide)."""
    est = ability(ANCHOR_Y, [1] * 10, [1.5] * 10, ANCHOR_B)
    assert est.method == "mle"
    assert round(est.theta, 2) == 0.83
    assert round(est.se, 2) == 0.56
    score = predicted_score(est, np.full(500, 1.5), TIERS)
    assert round(score.estimate, 3) == 0.658
    assert (round(score.lo, 3), round(score.hi, 3)) == (0.451, 0.841)
    tiers = [round(float(p2pl(est.theta, 1.5, b)), 2) for b in (-2, -1, 0, 1, 2)]
    assert tiers == [0.99, 0.94, 0.78, 0.44, 0.15]


def test_metrics_guide_hundred_anchors_in_the_same_pattern() -> None:
    """The same pattern ten times over: about 59% to 72%."""
    est = ability(np.repeat(ANCHOR_Y, 10), [1] * 100, [1.5] * 100, np.repeat(ANCHOR_B, 10))
    score = predicted_score(est, np.full(500, 1.5), TIERS)
    assert round(score.lo, 2) == 0.59
    assert round(score.hi, 2) == 0.72


def test_all_anchors_passed_gives_a_finite_prior_held_ability() -> None:
    est = ability([3, 3], [3, 3], [1.0, 1.0], [0.0, 1.0])
    assert est.method == "map"
    assert np.isfinite(est.theta) and est.theta > 0.5


def _simulate(seed: int, tasks: int, systems: int, trials: int = 1):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    a = np.exp(rng.normal(0, 0.35, tasks))
    b = rng.normal(0, 1, tasks)
    theta = rng.normal(0, 1, systems)
    m = np.full((systems, tasks), trials)
    s = rng.binomial(m, p2pl(theta[:, None], a, b))
    return a, b, theta, s, m


def _joint_map(s: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An independent fit: joint MAP over every θ, log a and b at once (L-BFGS), with
    priors θ ~ N(0, 1), log a ~ N(0, 0.5²), b ~ N(0, 2²). Not the module's algorithm."""
    J, n_tasks = s.shape

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        th, la, b = x[:J], x[J : J + n_tasks], x[J + n_tasks :]
        a = np.exp(la)
        z = a * (th[:, None] - b)
        p = 1 / (1 + np.exp(-z))
        ll = s * np.log(p + 1e-300) + (m - s) * np.log(1 - p + 1e-300)
        r = s - m * p
        nlp = -ll.sum() + 0.5 * (th @ th) + 0.5 * (la @ la) / 0.25 + 0.5 * (b @ b) / 4
        g_th = -(r * a).sum(1) + th
        g_la = -(r * (th[:, None] - b) * a).sum(0) + la / 0.25
        g_b = (r * a).sum(0) + b / 4
        return float(nlp), np.concatenate([g_th, g_la, g_b])

    res = minimize(objective, np.zeros(J + 2 * n_tasks), jac=True, method="L-BFGS-B")
    return np.exp(res.x[J : J + n_tasks]), res.x[J + n_tasks :]


def test_parameter_recovery_against_the_truth_and_an_independent_fit() -> None:
    """120 tasks, 300 simulated systems, one trial each. The scale is fixed by the systems'
    N(0, 1): the truth is put on the sample's own scale (its abilities' mean and SD) before
    comparing. Tolerances: b and a each within RMSE 0.25 of the truth, 85-99% of true values
    inside ±1.96 SE; the independent joint fit (whose abilities are not integrated out, so its
    scale differs a little) agrees: correlation above 0.97 for b and 0.95 for a."""
    a, b, theta, s, m = _simulate(3, 120, 300)
    fit = fit_2pl(s, m)
    assert fit.converged
    b_true = (b - theta.mean()) / theta.std()
    a_true = a * theta.std()
    assert np.sqrt(np.mean((fit.b - b_true) ** 2)) < 0.25
    assert np.sqrt(np.mean((fit.a - a_true) ** 2)) < 0.25
    assert 0.85 <= np.mean(np.abs(fit.b - b_true) < 1.96 * fit.se_b) <= 0.99
    assert 0.85 <= np.mean(np.abs(fit.a - a_true) < 1.96 * fit.se_a) <= 0.99
    a_joint, b_joint = _joint_map(s, m)
    assert np.corrcoef(fit.b, b_joint)[0, 1] > 0.97
    assert np.corrcoef(fit.a, a_joint)[0, 1] > 0.95
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.97


def test_repeated_trials_count_as_binomial_counts() -> None:
    """Three trials per cell on 60 systems: b within RMSE 0.35."""
    _, b, theta, s, m = _simulate(4, 80, 60, trials=3)
    fit = fit_2pl(s, m)
    assert np.sqrt(np.mean((fit.b - (b - theta.mean()) / theta.std()) ** 2)) < 0.35


def test_tasks_every_system_passes_or_fails_are_kept_finite_and_flagged() -> None:
    _, _, _, s, m = _simulate(5, 30, 80)
    s[:, 0] = m[:, 0]
    s[:, 1] = 0
    m[:, 2] = 0
    s[:, 2] = 0
    fit = fit_2pl(s, m)
    assert fit.unplaced == {
        0: "every fitted trial passed",
        1: "every fitted trial failed",
        2: "no trials in the fitted runs",
    }
    assert np.all(np.isfinite(fit.a)) and np.all(np.isfinite(fit.b))
    assert fit.b[0] < -2 and fit.b[1] > 2
    assert fit.se_b[2] > 1.5  # only the prior places it


def test_anchors_by_information_sit_near_the_abilities_seen() -> None:
    b = np.linspace(-3, 3, 61)
    a = np.ones(61)
    chosen = most_informative(a, b, [1.0, 1.2], 5)
    assert np.all(np.abs(b[chosen] - 1.1) < 0.35)
    info = information(a, b, [0.0])
    assert info.argmax() == 30 and info.max() == pytest.approx(0.25)


def test_midrange_keeps_the_band_nearest_half_first() -> None:
    rates = np.array([0.05, 0.3, 0.55, 0.9, 0.45, 0.8])
    assert midrange(rates, 2, (0.2, 0.8)).tolist() == [2, 4]
    assert midrange(rates, 10, (0.2, 0.8)).tolist() == [1, 2, 4, 5]
