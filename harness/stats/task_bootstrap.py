"""Percentile bootstraps over tasks or clusters for many per-task means at once.

Resampling whole clusters (or tasks) keeps trials of a task together, so repeated trials never
shrink an interval as if they were new tasks. Formulas and references: docs/statistics.md
("Cluster bootstrap").
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from harness.stats.bootstrap import cluster_resample_counts
from harness.stats.task_units import Unit


def group_codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """(code 0..g-1 per label, g): labels compared as strings."""
    _, codes = np.unique(labels.astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    return codes, int(codes.max()) + 1 if codes.size else 0


def bootstrap_means(
    values: np.ndarray,
    valid: np.ndarray,
    unit: Unit,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence: float,
    value_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals for several per-task means at once.

    ``values`` and ``valid`` have shape (n_tasks, K); column j's statistic is the mean of
    values[:, j] over tasks where valid[:, j]. Clustered unit: resample whole clusters
    (``cluster_resample_counts``). Task unit: resample tasks; when ``value_groups`` labels
    tasks whose rows are identical (e.g. the same (n, c) pair), draw the resample as
    multinomial counts over those groups, which has the same distribution as resampling
    tasks and costs one column per distinct row instead of one per task.
    Returns (lo, hi), each of shape (K,).
    """
    vals = np.where(valid, values, 0.0)
    weights = valid.astype(float)
    if unit.kind == "cluster" and unit.labels is not None:
        codes, g = group_codes(unit.labels)
        batches = cluster_resample_counts(g, n_resamples, rng)
    else:
        codes = np.arange(values.shape[0]) if value_groups is None else value_groups
        g = int(codes.max()) + 1
        freq = np.bincount(codes, minlength=g).astype(float)
        n_tasks = int(freq.sum())
        if value_groups is None:
            batches = cluster_resample_counts(g, n_resamples, rng)
        else:
            batches = multinomial_batches(n_tasks, freq / n_tasks, n_resamples, rng)
    k = values.shape[1]
    stacked = group_sums(codes, g, np.hstack([vals, weights]))
    reps = np.empty((n_resamples, k))
    row = 0
    for counts in batches:
        sums = counts.astype(float) @ stacked
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[row : row + counts.shape[0]] = sums[:, :k] / sums[:, k:]
        row += counts.shape[0]
    return percentile_ends(reps, confidence)


def percentile_ends(reps: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval ends along axis 0, ignoring undefined (NaN) replicates."""
    tail = (1.0 - confidence) / 2.0
    q = np.nanquantile if np.isnan(reps).any() else np.quantile
    with np.errstate(all="ignore"):
        lo, hi = q(reps, [tail, 1.0 - tail], axis=0)
    return lo, hi


def group_sums(codes: np.ndarray, g: int, values: np.ndarray) -> np.ndarray:
    """Σ of the rows of ``values`` per group code 0..g-1, shape (g, columns): sort by code,
    then ``np.add.reduceat`` (much faster than ``np.add.at`` for many columns)."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    out = np.zeros((g, values.shape[1]))
    out[sorted_codes[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out


def multinomial_batches(
    n: int, probs: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Resample counts over groups with probabilities ``probs``, in batches that stay small
    in memory (about two million cells each)."""
    rows = max(1, 2_000_000 // max(1, probs.size))
    done = 0
    while done < n_resamples:
        b = min(rows, n_resamples - done)
        yield rng.multinomial(n, probs, size=b)
        done += b


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
