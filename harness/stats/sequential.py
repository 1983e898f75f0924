"""Evidence that accumulates over nightly looks and stays valid at every look.

When-not-to-ship guide: repeatedly checking a fixed-sample interval invalidates its advertised
coverage; use a procedure designed for repeated inspection. Spending α over fresh one-night
comparisons keeps the error rate but throws the evidence away every morning (a 10-point
regression from night 31 was flagged in 1.5% of 60-night seasons). Here each night
contributes an estimate x_k with standard error σ_k (the night's paired delta, or an arm's
rate), and the evidence is a test martingale (Ville 1939) built from the Gaussian likelihood
ratio of a shift δ, mixed over δ ~ N(0, τ²) restricted to the alternative's side:

    M(S, V) = 2 / sqrt(1 + Vτ²) · exp(S²τ² / (2(1 + Vτ²))) · Φ(Sτ / sqrt(1 + Vτ²)),
    S = Σ_k (x_k − null)/σ_k² · sign,  V = Σ_k 1/σ_k²,

which under the null (every night's mean on the null's side) is a nonnegative supermartingale
with initial value 1 (Robbins' normal mixture; one-sided as in Howard et al. 2021).

- ``confirmation``: M over all nights since the season began; the claim (improvement,
  non-inferiority, meets the bar) is made when M ≥ 1/α; by Ville's inequality the chance of a
  false claim at *any* night is at most α.
- ``detector``: a regression can start on any night, and evidence from the nights before it
  would dilute it, so every night s starts its own M^(s) and the alarm statistic is the
  Shiryaev–Roberts sum R_t = Σ_{s ≤ t} M_t^(s) (an e-detector, Shin, Ramdas and Rinaldo 2024).
  R_t − t is a supermartingale, so R_t + (L − t) is a nonnegative supermartingale starting at
  L and P(R_t ≥ L/α at some night t ≤ L) ≤ α: at most α false alarms per L nights.
- ``innovations``: one arm read night after night has no same-night control; its recursive
  residuals x_k − (precision-weighted mean of nights before k), variance σ_k² + 1/Σ_{j<k}σ_j⁻²,
  are independent with mean 0 while the arm is unchanged (Brown, Durbin and Evans 1975), and
  drop when it regresses; the detector reads them.

Assumptions: nights are independent given the suite (fresh trials every night, same tasks);
each night's estimate is approximately normal with its estimated standard error (many tasks
per night). The estimand is the fixed suite's: "did the candidate get worse on these tasks".
Everything is vectorised over seasons (rows) for the simulations in ``benchmarks/nightly.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_SEASON = 60
"""Looks per season when none is planned: the detector's error statement is per 60 looks."""
DEFAULT_TAU = 0.05
"""Mixture scale of the shift δ (a rate difference): tuned to effects of a few points."""


def log_mixture(s: np.ndarray, v: np.ndarray, tau: float) -> np.ndarray:
    """log M(S, V) of the one-sided normal mixture (module doc); M = 1 where V = 0."""
    from scipy.special import log_ndtr

    s = np.asarray(s, dtype=float)
    v = np.asarray(v, dtype=float)
    a = 1.0 + v * tau * tau
    out = (
        np.log(2.0)
        - 0.5 * np.log(a)
        + s * s * tau * tau / (2.0 * a)
        + log_ndtr(s * tau / np.sqrt(a))
    )
    return np.asarray(out, dtype=float)


def _scores(x: np.ndarray, se: np.ndarray, null: float, side: str) -> tuple[np.ndarray, np.ndarray]:
    """Per night (x − null)/σ² signed toward the alternative, and 1/σ² (0 for a night with no
    standard error: it carries no evidence)."""
    if side not in ("above", "below"):
        raise ValueError("side must be 'above' or 'below'")
    x = np.atleast_2d(np.asarray(x, dtype=float))
    se = np.atleast_2d(np.asarray(se, dtype=float))
    ok = np.isfinite(x) & np.isfinite(se) & (se > 0)
    prec = np.where(ok, 1.0 / np.where(ok, se, 1.0) ** 2, 0.0)
    sign = 1.0 if side == "above" else -1.0
    return np.where(ok, sign * (x - null), 0.0) * prec, prec


def confirmation(
    x: object, se: object, null: float, side: str, tau: float = DEFAULT_TAU
) -> np.ndarray:
    """log M_t after each night t for "the mean is ``side`` ``null``" (seasons × nights)."""
    s, v = _scores(np.asarray(x), np.asarray(se), null, side)
    return log_mixture(np.cumsum(s, axis=1), np.cumsum(v, axis=1), tau)


@dataclass(frozen=True)
class DetectorTrace:
    """The detector after each night (arrays seasons × nights)."""

    log_r: np.ndarray
    """log R_t, the Shiryaev–Roberts statistic."""
    start: np.ndarray
    """The night s (0-based) whose M_t^(s) is largest: where the evidence begins."""


def detector(
    x: object, se: object, null: float, side: str, tau: float = DEFAULT_TAU
) -> DetectorTrace:
    """The e-detector for a shift to ``side`` of ``null`` starting at any night (module doc)."""
    from scipy.special import logsumexp

    s, v = _scores(np.asarray(x), np.asarray(se), null, side)
    rows, nights = s.shape
    cs = np.concatenate([np.zeros((rows, 1)), np.cumsum(s, axis=1)], axis=1)
    cv = np.concatenate([np.zeros((rows, 1)), np.cumsum(v, axis=1)], axis=1)
    log_r = np.empty((rows, nights))
    start = np.empty((rows, nights), dtype=np.intp)
    for t in range(1, nights + 1):
        # M_t^(s) for s = 1..t uses nights s..t: sums cs[t] − cs[s − 1].
        lm = log_mixture(cs[:, t : t + 1] - cs[:, :t], cv[:, t : t + 1] - cv[:, :t], tau)
        log_r[:, t - 1] = logsumexp(lm, axis=1)
        start[:, t - 1] = np.argmax(lm, axis=1)
    return DetectorTrace(log_r=log_r, start=start)


def alarm_threshold(alpha: float, season: int = DEFAULT_SEASON) -> float:
    """log(L/α): the detector's alarm level for at most α false alarms per ``season`` looks."""
    if not 0 < alpha < 1 or season < 1:
        raise ValueError("need 0 < alpha < 1 and season >= 1")
    return float(np.log(season / alpha))


def innovations(x: object, se: object) -> tuple[np.ndarray, np.ndarray]:
    """Recursive residuals of nightly estimates (module doc): (residual, its SE) per night,
    NaN for the first night with a standard error (nothing before it to compare with)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    se = np.atleast_2d(np.asarray(se, dtype=float))
    ok = np.isfinite(x) & np.isfinite(se) & (se > 0)
    prec = np.where(ok, 1.0 / np.where(ok, se, 1.0) ** 2, 0.0)
    cum_p = np.cumsum(prec, axis=1) - prec
    cum_px = np.cumsum(np.where(ok, prec * x, 0.0), axis=1) - np.where(ok, prec * x, 0.0)
    before = cum_p > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_before = np.where(before, cum_px / np.where(before, cum_p, 1.0), np.nan)
        var = se * se + np.where(before, 1.0 / np.where(before, cum_p, 1.0), np.nan)
    usable = ok & before
    return np.where(usable, x - mean_before, np.nan), np.where(usable, np.sqrt(var), np.nan)


def night_look(values: object, weights: object | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(estimate, SE) of one night's mean of per-task values (rows: seasons or runs).

    The suite's tasks are fixed from night to night, so the night's uncertainty is its
    trials': tasks are independent given the suite, and the SE is the task-level one,
    sqrt(Σ w_i²(x_i − x̄)² · n/(n − 1)) / Σ w_i. Spread of true effects between tasks adds
    to it, so it is conservative for the suite's mean.
    """
    x = np.atleast_2d(np.asarray(values, dtype=float))
    n = x.shape[1]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    total = float(w.sum())
    mean = (x @ w) / total
    if n < 2:
        return mean, np.full(mean.shape, np.nan)
    dev = (x - mean[:, None]) * w
    se = np.sqrt(np.sum(dev * dev, axis=1) * n / (n - 1)) / total
    return mean, se


def drift_se(now: object, before: object, weights: object | None = None) -> np.ndarray:
    """SE of one night's mean of an arm read alone (no same-night control): half the variance
    of the per-task change since the previous night, Var(x̄_t − x̄_{t−1}) ≈ 2·Var(x̄_t) while
    the arm is unchanged; a shift common to every task does not inflate it."""
    _, se = night_look(np.asarray(now, dtype=float) - np.asarray(before, dtype=float), weights)
    return np.asarray(se / np.sqrt(2.0), dtype=float)
