"""The independent unit of a report's intervals, and the interval of a mean over tasks.

A task's trials are averaged first; the interval is then formed over tasks, or over clusters
of tasks when the suite clusters them and there are enough clusters. Formulas and references:
docs/statistics.md ("Sampling unit", "Mean of per-task rates").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.stats.clustered import mean_ci_clustered
from harness.stats.intervals import wilson_interval

MIN_CLUSTERS = 5
"""Below this many clusters a cluster-robust interval is not trusted: with few clusters the
cluster-robust standard error is itself too uncertain (docs/statistics.md)."""


def clip01(x: float) -> float:
    """``x`` clipped to [0, 1] (interval ends of a rate)."""
    return min(1.0, max(0.0, float(x)))


@dataclass(frozen=True)
class Unit:
    """The independent unit intervals resample or cluster on, for one arm's included tasks."""

    kind: str
    """'cluster' or 'task'."""
    labels: np.ndarray | None
    """Cluster label per included task when kind == 'cluster', else None."""
    n_units: int
    reason: str
    warning: str | None = None


def choose_unit(clusters: np.ndarray, cluster_key: str) -> Unit:
    """Clusters when the suite clusters tasks and there are enough clusters; else tasks."""
    n_tasks = int(clusters.size)
    n_clusters = len(set(clusters.tolist()))
    if cluster_key == "task":
        return Unit("task", None, n_tasks, "the suite's report.cluster_key is 'task'")
    if n_clusters == n_tasks:
        return Unit("task", None, n_tasks, "every task is its own cluster")
    if n_clusters < MIN_CLUSTERS:
        return Unit(
            "task",
            None,
            n_tasks,
            f"only {n_clusters} cluster(s), fewer than {MIN_CLUSTERS}",
            warning=(
                f"only {n_clusters} cluster(s): too few for a cluster-robust interval, so "
                "intervals treat tasks as independent. They describe these clusters' tasks "
                "and are too narrow for a claim about clusters beyond them."
            ),
        )
    return Unit("cluster", clusters, n_clusters, f"{n_clusters} clusters")


def wilson_rate(mean: float, n: int, confidence: float) -> tuple[float, float]:
    """Wilson interval for a mean rate over ``n`` units, taking mean × n as the successes."""
    lo, hi = wilson_interval(clip01(mean) * n, n, confidence)
    return float(lo), float(hi)


def mean_interval(
    values: np.ndarray,
    unit: Unit,
    confidence: float,
    *,
    weights: np.ndarray | None = None,
    bounded: bool = True,
) -> dict[str, Any]:
    """Estimate and interval for the (weighted) mean of per-task values in [0, 1].

    Clustered unit: cluster-robust SE (CR1) with a Student t on C − 1 degrees of freedom
    (``mean_ci_clustered``). Task unit, or a clustered SE of zero: the Wilson interval over
    tasks with the mean times n as the success count (conservative for per-task rates, whose
    variance is at most p(1 − p)); with weights, a t interval over tasks.
    """
    n = int(values.size)
    out: dict[str, Any] = {"n": n, "unit": "task", "confidence": confidence}
    if n == 0:
        return {**out, "estimate": None, "lo": None, "hi": None, "method": "no tasks"}
    if unit.kind == "cluster":
        mi = mean_ci_clustered(values, unit.labels, confidence, weights=weights)
        if mi.se > 0:
            lo, hi = (clip01(mi.lo), clip01(mi.hi)) if bounded else (mi.lo, mi.hi)
            return {
                **out,
                "estimate": mi.estimate,
                "lo": lo,
                "hi": hi,
                "se": mi.se,
                "n_clusters": mi.n_clusters,
                "method": (
                    f"cluster-robust (CR1) standard error over {mi.n_clusters} clusters, "
                    f"Student t with {mi.n_clusters - 1} df"
                ),
            }
    if weights is not None and n >= 2:
        mi = mean_ci_clustered(values, None, confidence, weights=weights)
        lo, hi = (clip01(mi.lo), clip01(mi.hi)) if bounded else (mi.lo, mi.hi)
        return {
            **out,
            "estimate": mi.estimate,
            "lo": lo,
            "hi": hi,
            "se": mi.se,
            "method": f"weighted mean, t interval over {n} tasks (each task independent)",
        }
    mean = float(np.average(values, weights=weights))
    lo, hi = wilson_rate(mean, n, confidence)
    why = " (the clustered SE is zero)" if unit.kind == "cluster" else ""
    return {
        **out,
        "estimate": mean,
        "lo": lo,
        "hi": hi,
        "method": f"Wilson score interval over {n} tasks, mean of per-task rates{why}",
    }
