"""Helpers of the percentile bootstraps over tasks or clusters (label codes, percentile
ends) and the calibration error's bootstrap interval.

Resampling whole clusters (or tasks) keeps trials of a task together, so repeated trials never
shrink an interval as if they were new tasks. Formulas and references: docs/statistics.md
("Cluster bootstrap").
"""

from __future__ import annotations

import numpy as np

from harness.stats.bootstrap import cluster_resample_counts


def group_codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """(code 0..g-1 per label, g): labels compared as strings."""
    _, codes = np.unique(labels.astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    return codes, int(codes.max()) + 1 if codes.size else 0


def percentile_ends(reps: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval ends along axis 0, ignoring undefined (NaN) replicates."""
    tail = (1.0 - confidence) / 2.0
    q = np.nanquantile if np.isnan(reps).any() else np.quantile
    with np.errstate(all="ignore"):
        lo, hi = q(reps, [tail, 1.0 - tail], axis=0)
    return lo, hi


def ece_bootstrap_interval(
    confidence_stated: np.ndarray,
    outcome: np.ndarray,
    codes: np.ndarray,
    g: int,
    bins: int,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence: float,
) -> tuple[float, float]:
    """Percentile interval of the binned expected calibration error, resampling whole groups.

    ``codes`` (0..g-1) names each trial's group (its task or its task's cluster). Each group's
    per-bin sums (count, Σ stated confidence, Σ outcome) are computed once; a resample is a
    vector of group counts, so a replicate costs one matrix product.
    """
    b = np.minimum((confidence_stated * bins).astype(int), bins - 1)
    cell = codes * bins + b
    size = g * bins
    sums = np.hstack(
        [
            np.bincount(cell, minlength=size).reshape(g, bins),
            np.bincount(cell, weights=confidence_stated, minlength=size).reshape(g, bins),
            np.bincount(cell, weights=outcome, minlength=size).reshape(g, bins),
        ]
    ).astype(float)
    reps = np.empty(n_resamples)
    row = 0
    for counts in cluster_resample_counts(g, n_resamples, rng):
        s = counts.astype(float) @ sums
        cnt, sc, sy = s[:, :bins], s[:, bins : 2 * bins], s[:, 2 * bins :]
        total = cnt.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[row : row + counts.shape[0]] = np.abs(sc - sy).sum(axis=1) / total
        row += counts.shape[0]
    lo, hi = percentile_ends(reps, confidence)
    return float(lo), float(hi)
