"""Trial rows to per-task (and per-cluster) summaries, vectorized with ``np.bincount``.

The store holds one row per trial; every estimator here works on one number per task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats._util import encode_labels


@dataclass(frozen=True)
class TaskCounts:
    """Per-task trial counts, in the order of ``tasks`` (sorted unique task ids)."""

    tasks: np.ndarray
    """Unique task ids, sorted."""
    successes: np.ndarray
    """Sum of outcomes per task (a float: outcomes may be fractional scores)."""
    trials: np.ndarray
    """Number of trials per task (int)."""

    @property
    def rates(self) -> np.ndarray:
        """Per-task success rate successes / trials."""
        rates: np.ndarray = self.successes / self.trials
        return rates


def per_task_counts(task_ids: object, outcomes: object) -> TaskCounts:
    """Sum outcomes and count trials per task.

    ``task_ids`` labels each trial (any sortable labels, or integer indices); ``outcomes`` is
    the trial's score, usually 0/1. Tasks are returned in sorted id order.
    """
    tasks, codes = encode_labels(task_ids)
    y = np.asarray(outcomes, dtype=float)
    if y.shape != codes.shape:
        raise ValueError("task_ids and outcomes must have the same length")
    if not np.all(np.isfinite(y)):
        raise ValueError("outcomes contain NaN or infinite values")
    successes = np.bincount(codes, weights=y, minlength=tasks.size)
    trials = np.bincount(codes, minlength=tasks.size)
    return TaskCounts(tasks=tasks, successes=successes, trials=trials)


def per_task_rates(task_ids: object, outcomes: object) -> tuple[np.ndarray, np.ndarray]:
    """Per-task success rates and trial counts, in sorted task-id order.

    Estimand of each entry: the task's single-trial success probability p_j (agent-evaluation guide:
    "take each task's success rate over its trials, then average over tasks"). Returns
    ``(rates, counts)``; use ``per_task_counts`` to also get the task ids.
    """
    tc = per_task_counts(task_ids, outcomes)
    return tc.rates, tc.trials


def task_clusters(task_ids: object, cluster_ids: object) -> tuple[np.ndarray, np.ndarray]:
    """The cluster of each task, from trial-level task and cluster labels.

    Returns ``(tasks, clusters)`` in sorted task-id order (matching ``per_task_counts``).
    Raises ValueError if one task appears under two clusters.
    """
    tasks, codes = encode_labels(task_ids)
    clus = np.asarray(cluster_ids)
    if clus.shape != codes.shape:
        raise ValueError("task_ids and cluster_ids must have the same length")
    first = np.full(tasks.size, -1, dtype=np.intp)
    order = np.arange(codes.size)[::-1]
    first[codes[order]] = order  # index of the first trial of each task
    out = clus[first]
    if np.any(out[codes] != clus):
        raise ValueError("a task is labelled with more than one cluster")
    return tasks, out


def cluster_sizes(clusters: object) -> np.ndarray:
    """Number of members (tasks) per cluster, in sorted cluster-label order."""
    _, codes = encode_labels(clusters)
    return np.bincount(codes)


def macro_average(rates: object, groups: object) -> float:
    """Mean of per-group means (each group counts equally), as opposed to the plain mean.

    Metrics guide: macro vs micro averaging when categories are unbalanced.
    """
    r = np.asarray(rates, dtype=float)
    _, codes = encode_labels(groups)
    sums = np.bincount(codes, weights=r)
    counts = np.bincount(codes)
    return float(np.mean(sums / counts))
