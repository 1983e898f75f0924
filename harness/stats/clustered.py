"""Clustered standard errors (Miller 2024) and what clustering costs in effective sample size."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats._util import as_1d_float, encode_labels, z_two_sided


def _weighted_cluster_residuals(
    scores: np.ndarray, clusters: object | None, weights: object | None
) -> tuple[float, np.ndarray, float]:
    """Return (weighted mean, per-cluster sums of weighted residuals, total weight)."""
    if weights is None:
        w = np.ones_like(scores)
    else:
        w = as_1d_float(weights, "weights")
        if w.shape != scores.shape:
            raise ValueError("weights must match scores")
        if np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
    total = float(w.sum())
    mean = float(np.dot(w, scores) / total)
    resid = w * (scores - mean)
    if clusters is None:
        return mean, resid, total
    _, codes = encode_labels(clusters)
    if codes.shape != scores.shape:
        raise ValueError("clusters must have one label per score")
    return mean, np.bincount(codes, weights=resid), total


def clustered_se(
    scores: object,
    clusters: object | None = None,
    small_sample: bool = False,
    weights: object | None = None,
) -> float:
    """Cluster-robust standard error of the mean of ``scores``.

    Estimand: the sampling SD of the (weighted) mean when whole clusters are the independent
    unit (Miller 2024; metrics guide and agent-evaluation guide):

        SE = sqrt( Σ_c ( Σ_{i∈c} w_i (s_i − s̄) )² ) / Σ_i w_i

    which is Miller's formula for w = 1. ``small_sample=True`` multiplies by sqrt(C/(C−1)),
    the small-sample cluster correction C/(C−1) (and statsmodels' default for a cluster-robust mean). With
    ``clusters=None`` every score is its own cluster; with ``small_sample=True`` that equals
    the usual SD(ddof=1)/sqrt(n). Assumes clusters are independent and reasonably many
    (with few, or one dominant, cluster the estimate itself is biased low, agent-evaluation guide).
    """
    s = as_1d_float(scores, "scores")
    if s.size == 0:
        raise ValueError("scores is empty")
    _, sums, total = _weighted_cluster_residuals(s, clusters, weights)
    n_clusters = sums.size
    se = math.sqrt(float(np.dot(sums, sums))) / total
    if small_sample:
        if n_clusters < 2:
            return math.nan
        se *= math.sqrt(n_clusters / (n_clusters - 1))
    return se


@dataclass(frozen=True)
class MeanInterval:
    """A mean with its standard error and interval."""

    estimate: float
    se: float
    lo: float
    hi: float
    n: int
    """Number of scores (tasks)."""
    n_clusters: int
    """Number of independent clusters the SE was computed from."""
    critical: float
    """The critical value the half-width was multiplied by."""
    confidence: float


def mean_ci_clustered(
    rates: object,
    clusters: object | None = None,
    confidence: float = 0.95,
    *,
    weights: object | None = None,
    distribution: str = "t",
) -> MeanInterval:
    """Cluster-aware interval for the mean of per-task rates (or any per-task scores).

    Estimand: the mean per-task success probability over the population the clusters were
    drawn from (metrics guide, agent-evaluation guide and when-not-to-ship guide). Interval: estimate ± q · SE, with SE the clustered SE
    *with* the sqrt(C/(C−1)) correction and q the Student-t quantile on C − 1 degrees of
    freedom (``distribution="t"``, the default, which is the usual CR1 + t(C−1) recipe for
    few clusters) or the normal quantile (``distribution="normal"``). ``clusters=None`` treats
    each task as its own cluster. Average trials within a task first (``per_task_rates``):
    trials are never independent units. The interval is not clipped to [0, 1].
    """
    s = as_1d_float(rates, "rates")
    mean, sums, total = _weighted_cluster_residuals(s, clusters, weights)
    n_clusters = int(sums.size)
    if n_clusters < 2:
        raise ValueError("need at least two clusters for a clustered interval")
    se = math.sqrt(float(np.dot(sums, sums)) * n_clusters / (n_clusters - 1)) / total
    if distribution == "t":
        from scipy.special import stdtrit

        q = float(stdtrit(n_clusters - 1, 0.5 + confidence / 2.0))
    elif distribution == "normal":
        q = z_two_sided(confidence)
    else:
        raise ValueError("distribution must be 't' or 'normal'")
    return MeanInterval(
        estimate=mean,
        se=se,
        lo=mean - q * se,
        hi=mean + q * se,
        n=int(s.size),
        n_clusters=n_clusters,
        critical=q,
        confidence=confidence,
    )


def effective_clusters_from_sizes(sizes: object) -> float:
    """Effective number of independent clusters J²/Σ_r J_r² (agent-evaluation guide).

    Estimand: under a model where every cluster r shifts all J_r of its tasks by an
    independent effect of common variance, the number m of independent effects whose mean
    has the same variance as the task mean. Agent-evaluation guide: sizes (3, 1) give 1.6; SWE-bench
    Verified's repository sizes give 3.9.
    """
    j = as_1d_float(sizes, "sizes")
    if np.any(j < 0) or j.sum() <= 0:
        raise ValueError("sizes must be non-negative with a positive sum")
    return float(j.sum() ** 2 / np.dot(j, j))


def effective_clusters(clusters: object) -> float:
    """Effective number of clusters J²/Σ_r J_r² from one cluster label per task (agent-evaluation guide)."""
    _, codes = encode_labels(clusters)
    return effective_clusters_from_sizes(np.bincount(codes))


def design_effect(cluster_size: float, icc: float) -> float:
    """Survey design effect 1 + (m − 1)ρ for clusters of size m and intra-cluster correlation ρ.

    The factor by which clustering inflates the variance of a mean (metrics guide: m = 5, ρ = 0.5
    gives 3, so the SE grows by sqrt(3) ≈ 1.73). Assumes equal cluster sizes.
    """
    if cluster_size < 1:
        raise ValueError("cluster_size must be at least 1")
    return 1.0 + (cluster_size - 1.0) * icc


def effective_sample_size(scores: object, clusters: object) -> float:
    """Number of independent units the clustered data are worth: n · SE²_naive / SE²_clustered.

    Estimands guide: 50 tasks × 4 rollouts (200 trials) carry about as much information as 55
    independent tasks. Naive SE treats every score as independent (SD ddof=1 / sqrt(n));
    clustered SE uses the sqrt(C/(C−1)) correction.
    """
    s = as_1d_float(scores, "scores")
    naive = clustered_se(s, None, small_sample=True)
    clus = clustered_se(s, clusters, small_sample=True)
    if clus == 0:
        return float(s.size)
    return float(s.size * (naive / clus) ** 2)
