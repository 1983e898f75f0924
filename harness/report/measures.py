"""The measures beside the success rate (metrics guide), one arm at a time: precision, recall,
F1 and specificity of classification-style tasks with their confusion matrix; the macro
average beside the micro one when task classes are unbalanced; the mean partial-credit score
with its distribution; and the success interval of the estimand the suite did not declare
(fixed-suite beside superpopulation). Pure functions over one arm's per-task arrays; the
statistics are ``harness.stats``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import numpy as np

from harness.stats.classification import METRICS, classification_metrics, trial_predictions
from harness.stats.estimate import Estimate, mean_estimate
from harness.stats.fixed_suite import fixed_suite_estimate
from harness.stats.records import Interval
from harness.stats.task_units import Unit

UNBALANCED = 1.5
"""Largest-to-smallest class size ratio from which the macro average is shown."""
SCORE_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
BOTTOM = 0.4
"""Scores below this are "at the bottom of the scale" (1 or 2 on a 1–5 rubric)."""
WHAT = {
    "precision": "of the trials that flagged (said positive), the share that were right",
    "recall": "of the positive cases, the share flagged (sensitivity)",
    "specificity": "of the negative cases, the share left alone",
    "f1": "harmonic mean of precision and recall, 2PR/(P + R)",
    "accuracy": "share of trials answered correctly (misleads when one class is rare)",
}


class ClassificationSection(TypedDict):
    """Precision, recall, F1, specificity and accuracy of the tasks that declare ``positive``."""

    tasks: int
    positive_tasks: int
    negative_tasks: int
    confusion: dict[str, float]
    """tp, fp, tn, fn in trials (each task's trials weighted 1/its trials: tasks count once)."""
    confusion_trials: dict[str, int]
    """The same cells in counted trials, unweighted."""
    metrics: dict[str, Interval | None]
    """Metric → its estimate and interval (None: undefined, see ``undefined``)."""
    undefined: dict[str, str]
    method: str


class MacroSection(TypedDict):
    """The macro average (each class counts once) beside the micro one (each task once)."""

    classes: dict[str, int]
    """Class → counted tasks."""
    micro: Interval
    macro: Interval


class ScoreBin(TypedDict):
    lo: float
    hi: float
    trials: int


class ScoresSection(TypedDict):
    """The graders' partial credit: its mean over tasks with an interval, and its shape."""

    mean: Interval
    trials: int
    histogram: list[ScoreBin]
    share_bottom: float
    """Share of trials scoring below ``BOTTOM``."""


class Measures(TypedDict):
    classification: ClassificationSection | None
    macro: MacroSection | None
    scores: ScoresSection | None
    other_estimand: Interval | None
    """The success interval for the estimand the suite did not declare (both are shown)."""


def interval_of(e: Estimate, estimand: str, unit: str | None = None) -> Interval:
    """An Estimate as the report's interval record, with what it estimates."""
    rec: Interval = {
        "estimate": e.estimate,
        "lo": e.lo,
        "hi": e.hi,
        "se": e.se,
        "n": e.n,
        "unit": unit or ("task" if e.unit != "trial" else "trial"),
        "confidence": e.confidence,
        "method": e.method,
        "method_key": e.method_key,
        "estimand": estimand,
    }
    if e.unit == "cluster":
        rec["n_clusters"] = e.n_units
    if e.warning:
        rec["warning"] = e.warning
    return rec


def _unit_labels(unit: Unit, n_tasks: int) -> np.ndarray:
    """Each counted task's independent unit: its cluster, or itself."""
    if unit.kind == "cluster" and unit.labels is not None:
        return np.asarray(unit.labels).astype(str)
    return np.arange(n_tasks).astype(str)


def classification_section(
    tasks: np.ndarray,
    c: np.ndarray,
    n: np.ndarray,
    unit: Unit,
    positives: Mapping[str, bool],
    confidence: float,
) -> ClassificationSection | None:
    """The classification metrics over the counted tasks that declare their truth; each of
    a task's counted trials is one prediction (passed: its truth), weighted 1/its trials."""
    known = np.array([str(t) in positives for t in tasks.tolist()], dtype=bool)
    if not known.any():
        return None
    y_task = np.array([float(positives[str(t)]) for t in tasks[known].tolist()])
    ck, nk = c[known].astype(int), n[known].astype(int)
    per_task = np.repeat(np.arange(ck.size), nk)
    offset = np.arange(per_task.size) - np.repeat(np.cumsum(nk) - nk, nk)
    passed = offset < ck[per_task]
    truth = y_task[per_task]
    predicted = trial_predictions(truth, passed)
    weights = 1.0 / nk[per_task]
    clusters = _unit_labels(unit, c.size)[known][per_task]
    out = classification_metrics(truth, predicted, clusters, weights=weights, confidence=confidence)
    raw = classification_metrics(truth, predicted).confusion
    metrics: dict[str, Interval | None] = {}
    for name in METRICS:
        e = out.metric(name)
        metrics[name] = None if e is None else interval_of(e, WHAT[name], "trial")
    return {
        "tasks": int(known.sum()),
        "positive_tasks": int(y_task.sum()),
        "negative_tasks": int((1 - y_task).sum()),
        "confusion": out.confusion.as_dict(),
        "confusion_trials": {k: int(v) for k, v in raw.as_dict().items()},
        "metrics": metrics,
        "undefined": dict(out.missing),
        "method": "each counted trial of a task that declares `positive` is one prediction "
        "(passed: the task's truth); trials weighted 1/trials of their task so each task "
        "counts once; each metric a ratio of sums with a cluster-robust interval over "
        f"{'clusters' if unit.kind == 'cluster' else 'tasks'}",
    }


def macro_section(
    classes: np.ndarray, rates: np.ndarray, unit: Unit, confidence: float
) -> MacroSection | None:
    """Macro beside micro when the task classes are unbalanced (largest ≥ 1.5 × smallest)."""
    names, codes = np.unique(classes.astype(str), return_inverse=True)
    sizes = np.bincount(codes)
    if names.size < 2 or sizes.max() < UNBALANCED * sizes.min():
        return None
    labels = unit.labels if unit.kind == "cluster" else None
    micro = mean_estimate(rates, labels, confidence=confidence)
    macro = mean_estimate(rates, labels, weights=1.0 / sizes[codes], confidence=confidence)
    return {
        "classes": {str(k): int(v) for k, v in zip(names, sizes, strict=True)},
        "micro": interval_of(micro, "how often a random task succeeds (each task counts once)"),
        "macro": interval_of(
            macro, "how good the arm is across the kinds of work (each class counts once)"
        ),
    }


def scores_section(
    scores: np.ndarray, task_of: np.ndarray, n_tasks: int, unit: Unit, confidence: float
) -> ScoresSection | None:
    """The mean over tasks of each task's mean score, and the trials' score histogram; None
    when no trial has a score strictly between 0 and 1 (then the success rate says it all)."""
    known = np.isfinite(scores)
    s = np.clip(scores[known], 0.0, 1.0)
    if s.size == 0 or np.all((s == 0) | (s == 1)):
        return None
    sums = np.bincount(task_of[known], weights=s, minlength=n_tasks)
    counts = np.bincount(task_of[known], minlength=n_tasks)
    has = counts > 0
    labels = unit.labels[has] if unit.kind == "cluster" and unit.labels is not None else None
    e = mean_estimate(sums[has] / counts[has], labels, confidence=confidence)
    hist, _ = np.histogram(s, bins=SCORE_BINS)
    bins = zip(SCORE_BINS, SCORE_BINS[1:], hist.tolist(), strict=False)
    return {
        "mean": interval_of(e, "mean partial-credit score of a task (its trials' mean score)"),
        "trials": int(s.size),
        "histogram": [{"lo": lo, "hi": hi, "trials": int(k)} for lo, hi, k in bins],
        "share_bottom": float(np.mean(s < BOTTOM)),
    }


def fixed_suite_interval(
    c: np.ndarray, n: np.ndarray, weights: np.ndarray | None, confidence: float
) -> Interval:
    """The success rate's interval with the suite's tasks held fixed (trial noise only)."""
    from harness.stats.fixed_suite import ESTIMAND

    e = fixed_suite_estimate(c, n, weights=weights, confidence=confidence)
    return interval_of(e, ESTIMAND, "task")
