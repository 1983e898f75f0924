"""The independent unit of a report's intervals, and the interval of a mean over tasks.

A task's trials are averaged first; the interval is then formed over tasks, or over clusters
of tasks when the suite clusters them and there are enough clusters. Formulas and references:
docs/statistics.md ("Sampling unit", "Mean of per-task rates").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats.estimate import FEW_CLUSTERS, Kind, mean_estimate
from harness.stats.records import Interval

MIN_CLUSTERS = 2
"""Clusters needed for a cluster-level interval. With one cluster nothing can be said about
clusters beyond it, so intervals describe its tasks (with a warning); from two clusters on the
interval is cluster-robust (CR2 + t on Imbens–Kolesár df), and below ``FEW_CLUSTERS`` it
warns."""


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
    """Clusters whenever the suite clusters tasks into two or more clusters; else tasks."""
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
            "one cluster",
            warning=(
                "every task is in one cluster: intervals treat its tasks as independent and "
                "describe this cluster's tasks only, not clusters beyond it"
            ),
        )
    warning = None
    if n_clusters < FEW_CLUSTERS:
        warning = (
            f"only {n_clusters} clusters (fewer than {FEW_CLUSTERS}): the cluster-robust (CR2) "
            "intervals use t on few degrees of freedom: they hold their level but are wide"
        )
    return Unit("cluster", clusters, n_clusters, f"{n_clusters} clusters", warning=warning)


def mean_interval(
    values: np.ndarray,
    unit: Unit,
    confidence: float,
    *,
    weights: np.ndarray | None = None,
    bounded: bool = True,
    kind: Kind | None = None,
) -> Interval:
    """Estimate and interval for the (weighted) mean of per-task values, as a report record.

    The method is ``harness.stats.mean_estimate``'s, the one every view uses: CR2 + t on
    Imbens–Kolesár df over clusters (on the logit scale for a rate); Wilson over tasks for an unweighted rate with tasks as the unit;
    a bound when every unit shows the same value. ``bounded=False`` (or ``kind="score"``)
    leaves the interval unclipped.
    """
    n = int(values.size)
    out: Interval = {"n": n, "unit": "task", "confidence": confidence}
    if n == 0:
        return {**out, "estimate": None, "lo": None, "hi": None, "method": "no tasks"}
    k: Kind = kind or ("rate" if bounded else "score")
    e = mean_estimate(
        values,
        unit.labels if unit.kind == "cluster" else None,
        weights=weights,
        kind=k,
        confidence=confidence,
    )
    rec: Interval = {
        **out,
        "estimate": e.estimate,
        "lo": e.lo,
        "hi": e.hi,
        "se": e.se,
        "method": e.method,
        "method_key": e.method_key,
    }
    if e.unit == "cluster":
        rec["n_clusters"] = e.n_units
    if e.warning:
        rec["warning"] = e.warning
    return rec
