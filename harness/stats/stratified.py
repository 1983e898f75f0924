"""Reweighting a deliberately unbalanced suite to the population, and what it costs."""

from __future__ import annotations

import math

import numpy as np

from harness.stats._util import as_1d_float


def stratified_estimate(rates: object, counts: object, weights: object) -> tuple[float, float]:
    """Stratified pass rate Σ_h w_h p̂_h and its SE sqrt(Σ_h w_h² p̂_h(1 − p̂_h)/n_h).

    Estimand: the pass rate over a population whose strata have shares w_h (estimands guide).
    ``weights`` are normalized to sum to 1. ``rates`` are per-stratum pass rates on
    ``counts`` independent tasks. Estimands guide: joins 120/200 and lookups 95/100 with production
    shares 20%/80% give 88%. Assumes independent tasks within strata and binary outcomes;
    strata with no tasks cannot be reweighted (no support).
    """
    p = as_1d_float(rates, "rates")
    n = as_1d_float(counts, "counts")
    w = as_1d_float(weights, "weights")
    if not (p.shape == n.shape == w.shape):
        raise ValueError("rates, counts and weights must have the same length")
    if np.any(n <= 0):
        raise ValueError("every stratum needs at least one task")
    if np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    w = w / w.sum()
    estimate = float(np.dot(w, p))
    var_terms = w * w * p * (1.0 - p) / n
    return estimate, math.sqrt(float(var_terms.sum()))


def stratum_variance_shares(rates: object, counts: object, weights: object) -> np.ndarray:
    """Each stratum's share of the stratified estimate's variance (estimands guide: lookups, 86%)."""
    p = as_1d_float(rates, "rates")
    n = as_1d_float(counts, "counts")
    w = as_1d_float(weights, "weights")
    w = w / w.sum()
    terms = w * w * p * (1.0 - p) / n
    total = terms.sum()
    return terms / total if total > 0 else np.zeros_like(terms)


def kish_effective_n(weights: object) -> float:
    """Kish effective sample size (Σ w_i)² / Σ w_i² of per-item weights (estimands guide).

    The number of equally weighted items carrying the same information. Estimands guide: 200 items
    at weight 0.3 and 100 at 2.4 give about 152 of 300.
    """
    w = as_1d_float(weights, "weights")
    if np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    return float(w.sum() ** 2 / np.dot(w, w))


def finite_population_se(p: float, n: float, N: float) -> float:
    """SE of a pass rate from n tasks sampled without replacement out of a benchmark of N.

    SE = sqrt(p(1 − p)/n · (N − n)/(N − 1)) (metrics guide). Estimand: the full-benchmark score,
    not the agent's skill beyond the benchmark; it is 0 when n = N.
    """
    if not 0 < n <= N or N < 2:
        raise ValueError("need 0 < n <= N and N >= 2")
    return math.sqrt(p * (1.0 - p) / n * (N - n) / (N - 1))
