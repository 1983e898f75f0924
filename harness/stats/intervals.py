"""Intervals for a single pass rate: Wilson (the default) and Wald (for comparison only)."""

from __future__ import annotations

import math
from typing import overload

import numpy as np

from harness.stats._util import z_two_sided

FloatOrArray = float | np.ndarray


@overload
def wilson_interval(
    successes: float, n: float, confidence: float = 0.95
) -> tuple[float, float]: ...


@overload
def wilson_interval(
    successes: np.ndarray, n: float | np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def wilson_interval(
    successes: float | np.ndarray, n: np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]: ...


def wilson_interval(
    successes: float | np.ndarray,
    n: float | np.ndarray,
    confidence: float = 0.95,
) -> tuple[FloatOrArray, FloatOrArray]:
    """Wilson score interval for a binomial proportion.

    Estimand: the per-unit success probability p behind ``successes`` out of ``n``
    independent units (metrics guide, eval-harness guide and estimands guide). With p̂ = successes / n and z the two-sided
    normal quantile,

        centre = (p̂ + z²/2n) / (1 + z²/n)
        half   = z / (1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/4n²)

    ``successes`` may be fractional (a mean of per-task rates times the number of tasks),
    which keeps the same arithmetic but is then only an approximation. Works elementwise
    on arrays. ``n == 0`` gives the vacuous interval (0, 1). Assumes independent units:
    trials of one task are not independent tasks (use ``mean_ci_clustered`` for those).

    Returns ``(lo, hi)``, clipped to [0, 1]; exactly 0 at 0/n and 1 at n/n.
    """
    s = np.asarray(successes, dtype=float)
    m = np.asarray(n, dtype=float)
    if np.any(m < 0) or np.any(s < 0) or np.any(s > m):
        raise ValueError("need 0 <= successes <= n")
    z = z_two_sided(confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(m > 0, s / np.where(m > 0, m, 1.0), 0.0)
        safe_n = np.where(m > 0, m, 1.0)
        denom = 1.0 + z * z / safe_n
        centre = (p + z * z / (2.0 * safe_n)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / safe_n + z * z / (4.0 * safe_n * safe_n))
    lo = np.clip(centre - half, 0.0, 1.0)
    hi = np.clip(centre + half, 0.0, 1.0)
    lo = np.where(s == 0, 0.0, lo)
    hi = np.where(s == m, 1.0, hi)
    lo = np.where(m == 0, 0.0, lo)
    hi = np.where(m == 0, 1.0, hi)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def wald_interval(successes: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wald (normal-approximation) interval p̂ ± z·sqrt(p̂(1 − p̂)/n), unclipped.

    Estimand as in ``wilson_interval`` (metrics guide). Provided to show its failures: it has zero
    width at 0/n and n/n and runs past [0, 1] near the edges (metrics guide: 9/10 gives
    [0.714, 1.086]). Do not report it; use Wilson.
    """
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError("need n > 0 and 0 <= successes <= n")
    p = successes / n
    half = z_two_sided(confidence) * math.sqrt(p * (1.0 - p) / n)
    return p - half, p + half


def wilson_half_width(p: float, n: float, confidence: float = 0.95) -> float:
    """Half-width of the Wilson interval at observed rate p on n units (eval-harness guide and estimands guide)."""
    if n <= 0:
        raise ValueError("n must be positive")
    z = z_two_sided(confidence)
    denom = 1.0 + z * z / n
    return z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))


def wilson_sample_size(p: float, half_width: float, confidence: float = 0.95) -> int:
    """Smallest n whose Wilson half-width at rate p is at most ``half_width``.

    Planning helper (estimands guide: ±5 points at 80% needs 245 independent tasks). The half-width
    decreases in n, so a doubling search followed by bisection finds the minimum.
    """
    if not 0.0 < half_width < 0.5:
        raise ValueError("half_width must lie in (0, 0.5)")
    hi = 1
    while wilson_half_width(p, hi, confidence) > half_width:
        hi *= 2
    lo = max(1, hi // 2)
    while lo < hi:
        mid = (lo + hi) // 2
        if wilson_half_width(p, mid, confidence) <= half_width:
            hi = mid
        else:
            lo = mid + 1
    return lo


def binom_ppf(level: float, n: int, p: float) -> int:
    """Smallest k with P(X <= k) >= level for X ~ Binomial(n, p), 0 < level < 1.

    The same steps as scipy.stats.binom.ppf (the inverse of the CDF in k, then one step
    down if that CDF already reaches the level) from scipy.special alone: importing
    scipy.stats costs about 0.5 s more per process, paid by every CLI report."""
    from scipy.special import bdtr, bdtrik

    k = math.ceil(float(bdtrik(level, n, p)))
    below = max(k - 1, 0)
    return below if float(bdtr(below, n, p)) >= level else k


def quantile_interval(
    values: object, q: float, confidence: float = 0.95
) -> tuple[float, float, float]:
    """(estimate, lo, hi) for the q-quantile by order statistics (distribution-free).

    The interval runs between the order statistics whose ranks bracket the Binomial(n, q)
    count of values below the true quantile at the two-sided level (metrics guide: report
    percentiles of latency and cost, not only means). The estimate is numpy's linear
    quantile. Assumes independent values: trials of one task share its latency profile, so
    with strongly task-dependent latencies the interval is too narrow. Ends saturate at the
    sample's minimum or maximum when n is too small for the level.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("no values")
    alpha = 1.0 - confidence
    lo_rank = binom_ppf(alpha / 2, n, q)  # number of values below the lower end
    hi_rank = binom_ppf(1 - alpha / 2, n, q) + 1
    lo = x[max(0, min(n - 1, lo_rank - 1))] if lo_rank >= 1 else x[0]
    hi = x[min(n - 1, hi_rank - 1)]
    return float(np.quantile(x, q)), float(lo), float(hi)
