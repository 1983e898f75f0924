"""Skew-aware intervals for a mean of per-task values in [0, 1], and for a paired difference.

Near the top (or bottom) of the scale a mean of rates is skewed: a sample that happens to miss
the rare weak clusters has a high mean *and* a small standard error, so the symmetric t bound
lands above the truth too often (8–15% instead of 5% at bar 0.8–0.95 with 12–60 unequal
clusters, ``benchmarks/coverage.py``). Everything here is vectorised over samples (rows), so a
simulation measures exactly these functions.

- ``logit_bounds``: the interval on the logit scale, θ̂ = logit(x̄) ± q·SE/(x̄(1 − x̄)), with
  the second-order (Jensen) bias of logit(x̄), (2x̄ − 1)·SE²/(2x̄²(1 − x̄)²), removed on the
  side where it would make the interval too narrow; back-transformed, so it stays in [0, 1]
  and is longer on the side the skew points to. The interval every view shows.
- ``cautious_bounds``: for decisions (a gate reads one end): the more cautious end of three
  logit-scale constructions that each fail in a different corner — the one above, the same
  with the cluster jackknife (CR3) standard error, and Hall's (1992) skewness-corrected
  studentized interval (cube-root inverse of T + κT²/3 + κ²T³/27 + κ/6, κ the skewness of
  the cluster contributions). Its one-sided error stays at or below nominal where each part
  alone exceeds it (measured in ``benchmarks/coverage.py``).
- ``mover_bounds``: a paired difference b − a from the two arms' own bounds and the
  correlation of their means (Zou and Donner 2008, "MOVER"; with Wilson arm intervals this is
  Newcombe's 1998 method for paired proportions): the skew of each arm carries over.
"""

from __future__ import annotations

import numpy as np

from harness.stats.cluster_design import ClusterDesign

_EPS = 1e-12


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EPS, 1 - _EPS)
    return np.asarray(np.log(p / (1 - p)), dtype=float)


def _expit(t: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * t))


def logit_bounds(mean: np.ndarray, se: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logit-scale interval with the Jensen bias removed on the side it narrows (module doc).

    ``mean`` in (0, 1), ``se`` > 0 its standard error, ``q`` the critical value (t quantile).
    """
    p = np.clip(mean, _EPS, 1 - _EPS)
    theta = _logit(p)
    s = se / (p * (1 - p))
    bias = (2 * p - 1) * se * se / (2 * p * p * (1 - p) * (1 - p))
    lo = _expit(theta - np.maximum(bias, 0.0) - q * s)
    hi = _expit(theta - np.minimum(bias, 0.0) + q * s)
    return lo, hi


def jackknife_logit_bounds(
    design: ClusterDesign, x: np.ndarray, mean: np.ndarray, se: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``logit_bounds`` with the cluster jackknife (delete-one-cluster) SE of logit(x̄)."""
    g = design.n_clusters
    loo = _logit(design.leave_one_out(x))
    s = np.sqrt((g - 1) / g * np.sum((loo - loo.mean(axis=1, keepdims=True)) ** 2, axis=1))
    p = np.clip(mean, _EPS, 1 - _EPS)
    theta = _logit(p)
    bias = (2 * p - 1) * se * se / (2 * p * p * (1 - p) * (1 - p))
    lo = _expit(theta - np.maximum(bias, 0.0) - q * s)
    hi = _expit(theta - np.minimum(bias, 0.0) + q * s)
    return lo, hi


def hall_quantiles(kappa: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t_lo, t_hi): the studentized values whose Hall-transformed value is ∓q.

    Hall's transformation g(T) = T + aT² + a²T³/3 + b with a = κ/3, b = κ/6 equals
    ((1 + aT)³ − 1)/(3a) + b, monotone, so its inverse is ((1 + 3a(y − b))^{1/3} − 1)/a.
    """
    a = kappa / 3.0
    b = kappa / 6.0
    small = np.abs(a) < 1e-10
    safe = np.where(small, 1.0, a)

    def inverse(y: np.ndarray) -> np.ndarray:
        return np.where(small, y - b, (np.cbrt(1.0 + 3.0 * a * (y - b)) - 1.0) / safe)

    return inverse(-q), inverse(q)


def binomial_skewness(design: ClusterDesign, mean: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """The skewness (in units of its spread, like ``ClusterDesign.skewness``) the mean would
    have if every task were an independent binomial proportion at the mean rate over its
    ``trials``: Σ w³ p(1 − p)(1 − 2p)/T² / (Σ w² p(1 − p)/T)^{3/2}. The logit scale already
    accounts for this much."""
    p = np.clip(mean, _EPS, 1 - _EPS)[:, None]
    w, t = design.weights[None, :], np.asarray(trials, dtype=float)[None, :]
    var = np.sum(w * w * p * (1 - p) / t, axis=1)
    third = np.sum(w**3 * p * (1 - p) * (1 - 2 * p) / (t * t), axis=1)
    return np.asarray(third / np.maximum(var, 1e-300) ** 1.5, dtype=float)


def hall_logit_bounds(
    design: ClusterDesign,
    x: np.ndarray,
    mean: np.ndarray,
    se: np.ndarray,
    q: np.ndarray,
    trials: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Hall's skewness correction on the logit scale.

    κ is the skewness of the cluster contributions. With tasks as the units (many of them)
    it is well estimated and mostly the binomial skew the logit scale already removes, so
    that part (``binomial_skewness``) is taken off: binary tasks with nothing but binomial
    noise get the plain logit interval. With clusters as the units the sample skewness of a
    few clusters runs small, and all of it is used. ``trials``: counted trials per task
    (default 1).
    """
    p = np.clip(mean, _EPS, 1 - _EPS)
    theta = _logit(p)
    s = se / (p * (1 - p))
    kappa = design.skewness(x, mean)
    if design.n_clusters == design.n:
        t = np.ones(design.n) if trials is None else trials
        kappa = kappa - binomial_skewness(design, mean, t)
    t_lo, t_hi = hall_quantiles(kappa, q)
    return _expit(theta - t_hi * s), _expit(theta - t_lo * s)


def cautious_bounds(
    design: ClusterDesign,
    x: np.ndarray,
    mean: np.ndarray,
    se: np.ndarray,
    q: np.ndarray,
    trials: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The more cautious end of ``logit_bounds``, ``jackknife_logit_bounds`` and
    ``hall_logit_bounds`` on each side (module doc)."""
    parts = [
        logit_bounds(mean, se, q),
        jackknife_logit_bounds(design, x, mean, se, q),
        hall_logit_bounds(design, x, mean, se, q, trials),
    ]
    lo = np.minimum.reduce([p[0] for p in parts])
    hi = np.maximum.reduce([p[1] for p in parts])
    return lo, hi


def mover_bounds(
    delta: np.ndarray,
    mean_a: np.ndarray,
    bounds_a: tuple[np.ndarray, np.ndarray],
    mean_b: np.ndarray,
    bounds_b: tuple[np.ndarray, np.ndarray],
    r: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """MOVER interval of b − a from each arm's (lo, hi) and the correlation r of their means:
    L = δ − sqrt((b − l_b)² + (u_a − a)² − 2r(b − l_b)(u_a − a)), U likewise."""
    la, ua = bounds_a
    lb, ub = bounds_b
    dl_b, du_a = mean_b - lb, ua - mean_a
    du_b, dl_a = ub - mean_b, mean_a - la
    lo = delta - np.sqrt(np.maximum(dl_b**2 + du_a**2 - 2 * r * dl_b * du_a, 0.0))
    hi = delta + np.sqrt(np.maximum(du_b**2 + dl_a**2 - 2 * r * du_b * dl_a, 0.0))
    return np.clip(lo, -1.0, 1.0), np.clip(hi, -1.0, 1.0)
