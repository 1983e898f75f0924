"""Reliability beyond accuracy: consistency, robustness, calibration and harm (metrics guide)."""

from __future__ import annotations

import numpy as np

from harness.stats._util import as_1d_float
from harness.stats.aggregate import per_task_counts
from harness.stats.paired import PairedDifference, paired_difference
from harness.stats.passk import pass_hat_k


def consistency(task_ids: object, outcomes: object, k: int) -> float:
    """Mean over tasks of the unbiased per-task pass^k (metrics guide: consistency is pass^k).

    Estimand: the chance that k independent runs of a random task all succeed. ``outcomes``
    are 0/1 per trial, labelled by ``task_ids``; every task needs at least k trials.
    The metrics guide's 4 tasks × 3 runs give pass^3 = 25%.
    """
    tc = per_task_counts(task_ids, outcomes)
    succ = tc.successes
    if np.any(succ != np.round(succ)):
        raise ValueError("consistency needs 0/1 outcomes")
    if np.any(tc.trials < k):
        raise ValueError(f"every task needs at least k={k} trials")
    return float(np.mean(pass_hat_k(tc.trials, succ.astype(np.int64), k)))


def robustness_drop(
    outcomes: object,
    perturbed_outcomes: object,
    confidence: float = 0.95,
    *,
    clusters: object | None = None,
) -> PairedDifference:
    """Paired change in success under a meaning-preserving perturbation of each task.

    Estimand: mean(perturbed − original) over the same (task, run) rows; negative means the
    agent loses success when the task is reworded (the metrics guide prints this as "drop −25
    points"). Interval and p-value are the paired normal approximation of
    ``paired_difference``; pass ``clusters`` (e.g. task ids) when several rows share a task,
    so the SE treats tasks, not runs, as independent.
    """
    return paired_difference(perturbed_outcomes, outcomes, confidence, clusters=clusters)


def _bin_edges(bins: int | object) -> np.ndarray:
    if isinstance(bins, int | np.integer):
        if bins < 1:
            raise ValueError("bins must be at least 1")
        edges = np.linspace(0.0, 1.0, int(bins) + 1)
        edges[-1] = np.nextafter(1.0, 2.0)  # make the last bin include confidence 1.0
        return edges
    edges = as_1d_float(bins, "bins")
    if edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("bin edges must be increasing")
    return edges


def expected_calibration_error(
    confidences: object, outcomes: object, bins: int | object = 10
) -> float:
    """Expected calibration error Σ_b (n_b/n) · |mean confidence_b − success rate_b|.

    Estimand: how far the agent's stated confidence is from its actual success (metrics guide,
    predictability). ``bins`` is a number of equal-width bins on [0, 1] (the last one closed)
    or explicit increasing edges with half-open bins [lo, hi); confidences outside every bin
    are ignored. The metrics guide's edges (0, 0.5, 0.8, 1.01) give 0.15 on its 12 runs. Binned ECE
    is biased upward at small n and depends on the binning; report the bins.
    """
    conf = as_1d_float(confidences, "confidences")
    y = as_1d_float(outcomes, "outcomes")
    if conf.shape != y.shape or conf.size == 0:
        raise ValueError("confidences and outcomes must be aligned and non-empty")
    edges = _bin_edges(bins)
    which = np.searchsorted(edges, conf, side="right") - 1
    inside = (which >= 0) & (which < edges.size - 1)
    nb = edges.size - 1
    count = np.bincount(which[inside], minlength=nb)
    sum_conf = np.bincount(which[inside], weights=conf[inside], minlength=nb)
    sum_y = np.bincount(which[inside], weights=y[inside], minlength=nb)
    used = count > 0
    gaps = np.abs(sum_conf[used] - sum_y[used]) / count[used]
    return float(np.sum(count[used] * gaps) / conf.size)


def harm_rate(severities: object) -> tuple[float, float]:
    """(share of runs with any harm, mean severity per run) (metrics guide, safety).

    ``severities`` is one non-negative number per run, 0 for no harm (the metrics guide uses 1 for
    minor and 3 for serious); the metrics guide's runs give (25%, 0.42).
    """
    s = as_1d_float(severities, "severities")
    if s.size == 0 or np.any(s < 0):
        raise ValueError("severities must be non-empty and non-negative")
    return float(np.mean(s > 0)), float(np.mean(s))


def unstable_tasks(task_ids: object, outcomes: object) -> np.ndarray:
    """Ids of tasks with both passes and failures among their trials (eval-harness guide: 2/5 is a
    finding, not a re-run). Sorted."""
    tc = per_task_counts(task_ids, outcomes)
    mask = (tc.successes > 0) & (tc.successes < tc.trials)
    return tc.tasks[mask]
