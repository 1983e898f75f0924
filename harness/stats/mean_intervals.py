"""Intervals for a mean of per-task values and for a paired difference, many samples at once.

The batch form of ``harness.stats.mean_estimate`` / ``paired_estimate``: the same method
choice per sample (one unit: the whole range; no variation between units: the bound of
``no_variation_interval``; otherwise the skew-aware interval of ``harness.stats.bounds``), on a
(samples × tasks) array with one fixed design. The report calls it with one sample; the
simulations in ``benchmarks/`` with thousands, so what they measure is what users get.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats.bounds import cautious_bounds, hall_quantiles, logit_bounds, mover_bounds
from harness.stats.cluster_design import ClusterDesign

ONE_UNIT, NO_VARIATION, METHOD = 0, 1, 2
EDGE = 0.1
"""A baseline rate within this of 0 or 1 makes the paired interval also read Hall's bound."""


@dataclass(frozen=True)
class Intervals:
    """Per sample: the mean, its interval and how it was formed."""

    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    se: np.ndarray
    df: np.ndarray
    case: np.ndarray
    """ONE_UNIT, NO_VARIATION or METHOD per sample."""


def t_quantile(df: np.ndarray, confidence: float) -> np.ndarray:
    """Two-sided Student t critical value at ``confidence`` on ``df`` degrees of freedom."""
    from scipy.special import stdtrit

    return np.asarray(stdtrit(df, 0.5 + confidence / 2.0), dtype=float)


def no_variation_bounds(
    value: np.ndarray, n_units: int, lo_r: float, hi_r: float, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Every unit showed ``value``: at most a share u = z²/(G + z²) of units can be unlike
    them (Wilson at 0 of G), each by at most the range, so value ± u·range, clipped."""
    from harness.stats._util import z_two_sided

    z = z_two_sided(confidence)
    u = z * z / (n_units + z * z)
    return np.maximum(lo_r, value - u * (value - lo_r)), np.minimum(
        hi_r, value + u * (hi_r - value)
    )


def wilson_bounds(mean: np.ndarray, n: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson over ``n`` independent units, the mean times n taken as the successes."""
    from harness.stats.intervals import wilson_interval

    lo, hi = wilson_interval(np.clip(mean, 0.0, 1.0) * n, float(n), confidence)
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def rate_intervals(
    design: ClusterDesign,
    x: np.ndarray,
    confidence: float,
    *,
    cautious: bool = False,
    wilson: bool = False,
    trials: np.ndarray | None = None,
) -> Intervals:
    """Interval of the weighted mean of values in [0, 1], for each row of ``x``.

    ``wilson``: the units are independent tasks with equal weights, so the display interval is
    Wilson's. ``cautious``: the decision bound (the more cautious end of the logit-scale
    constructions, and of Wilson when ``wilson``). ``trials``: counted trials per task
    (default 1), which the skewness correction of the decision bound reads.
    """
    mean, se, df = design.cr2(x)
    g = design.n_clusters
    case = _cases(x, se, g)
    q = t_quantile(df, confidence)
    lo, hi = _method_bounds(design, x, mean, se, q, confidence, cautious, wilson, trials)
    v_lo, v_hi = no_variation_bounds(mean, g, 0.0, 1.0, confidence)
    lo = np.select([case == ONE_UNIT, case == NO_VARIATION], [0.0, v_lo], lo)
    hi = np.select([case == ONE_UNIT, case == NO_VARIATION], [1.0, v_hi], hi)
    return Intervals(mean=mean, lo=lo, hi=hi, se=se, df=df, case=case)


def _cases(x: np.ndarray, se: np.ndarray, g: int) -> np.ndarray:
    spread = np.ptp(x, axis=1) if x.shape[1] else np.zeros(x.shape[0])
    case = np.full(x.shape[0], METHOD)
    case[(se == 0) | (spread == 0)] = NO_VARIATION
    if g < 2:
        case[:] = ONE_UNIT
    return case


def _method_bounds(
    design: ClusterDesign,
    x: np.ndarray,
    mean: np.ndarray,
    se: np.ndarray,
    q: np.ndarray,
    confidence: float,
    cautious: bool,
    wilson: bool,
    trials: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    safe_se = np.where(se > 0, se, 1.0)
    if cautious:
        lo, hi = cautious_bounds(design, x, mean, safe_se, q, trials)
        if wilson:
            w_lo, w_hi = wilson_bounds(mean, design.n, confidence)
            lo, hi = np.minimum(lo, w_lo), np.maximum(hi, w_hi)
        return lo, hi
    if wilson:
        return wilson_bounds(mean, design.n, confidence)
    return logit_bounds(mean, safe_se, q)


def paired_intervals(
    design: ClusterDesign,
    xa: np.ndarray,
    xb: np.ndarray,
    confidence: float,
    *,
    wilson: bool = False,
    trials: tuple[np.ndarray, np.ndarray] | None = None,
) -> Intervals:
    """Interval of the weighted mean of b − a (per-task rates of two arms on the same tasks).

    MOVER from each arm's interval (``rate_intervals``' method, at the critical value of the
    difference's own Imbens–Kolesár df) and the CR2 correlation of the arms' means; where the
    baseline's rate is within ``EDGE`` of 0 or 1 (and the units are clusters or weighted
    tasks), each end is the more cautious of MOVER's and Hall's (``_near_edge_bounds``).
    ``trials``: each arm's counted trials per task (default 1).
    """
    d = xb - xa
    delta, se_d, df = design.cr2(d)
    g = design.n_clusters
    case = _cases(d, se_d, g)
    q = t_quantile(df, confidence)
    arms = []
    for x, t in zip((xa, xb), trials or (None, None), strict=True):
        mean, se, _ = design.cr2(x, with_df=False)
        lo, hi = _method_bounds(design, x, mean, se, q, confidence, False, wilson, t)
        v_lo, v_hi = no_variation_bounds(mean, g, 0.0, 1.0, confidence)
        flat = se == 0
        arms.append((mean, se, np.where(flat, v_lo, lo), np.where(flat, v_hi, hi)))
    (ma, sa, la, ua), (mb, sb, lb, ub) = arms
    cov = design.covariance(xa, xb)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where((sa > 0) & (sb > 0), cov / np.where((sa > 0) & (sb > 0), sa * sb, 1.0), 0.0)
    lo, hi = mover_bounds(delta, ma, (la, ua), mb, (lb, ub), np.clip(r, -1.0, 1.0))
    if not wilson:
        lo, hi = _near_edge_bounds(design, d, delta, np.where(se_d > 0, se_d, 1.0), q, ma, lo, hi)
    v_lo, v_hi = no_variation_bounds(delta, g, -1.0, 1.0, confidence)
    lo = np.select([case == ONE_UNIT, case == NO_VARIATION], [-1.0, v_lo], lo)
    hi = np.select([case == ONE_UNIT, case == NO_VARIATION], [1.0, v_hi], hi)
    return Intervals(mean=delta, lo=lo, hi=hi, se=se_d, df=df, case=case)


def near_edge(rate: np.ndarray | float) -> np.ndarray:
    """Whether a baseline's estimated rate is within ``EDGE`` of 0 or 1."""
    r = np.asarray(rate, dtype=float)
    return np.asarray((r > 1.0 - EDGE) | (r < EDGE))


def near_edge_note(base_rate: float, wilson: bool) -> str:
    """The words a paired estimate's method adds when the near-edge rule applies."""
    if wilson or not bool(near_edge(base_rate)):
        return ""
    return (
        "; the baseline's rate is within 10 points of 0 or 1, so each end is the more "
        "cautious of MOVER's and Hall's skewness-corrected bound of the difference"
    )


def _near_edge_bounds(
    design: ClusterDesign,
    d: np.ndarray,
    delta: np.ndarray,
    se_d: np.ndarray,
    q: np.ndarray,
    base_mean: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Near the top (or bottom) of the scale the arms' logit intervals come out short on the
    side facing away from the edge when clusters differ strongly, and MOVER carries that into
    the end of b − a that subtracts the baseline's short side: with a baseline at 0.95 the
    non-inferiority gate called a candidate exactly at −margin a regression in 5.6–6.1% of
    runs (10,000 each, ``benchmarks/coverage_grid.py``). Hall's skewness-corrected bound of
    the difference itself (κ from the clusters' contributions to it) holds those cells; it is
    read only where the baseline's rate is within ``EDGE`` of 0 or 1, the cells where MOVER
    erred, so it costs no power at baselines 0.1–0.9."""
    t_lo, t_hi = hall_quantiles(design.skewness(d, delta), q)
    near = near_edge(base_mean)
    h_lo = np.clip(delta - t_hi * se_d, -1.0, 1.0)
    h_hi = np.clip(delta - t_lo * se_d, -1.0, 1.0)
    return np.where(near, np.minimum(lo, h_lo), lo), np.where(near, np.maximum(hi, h_hi), hi)
