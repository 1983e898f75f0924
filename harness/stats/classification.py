"""Classification metrics: precision, recall, F1 and specificity with intervals, and the
confusion matrix.

Some evals are classification tests (a guardrail that flags dangerous tool calls, a router
that escalates, a judge that says "this transcript failed"); plain accuracy misleads when the
positive class is rare (metrics guide: a detector that never flags 100 violations among 1,000
transcripts is 90% accurate and useless). Each *item* (a trial, or a labelled verdict) has a
truth t_i ∈ {0, 1} and a prediction f_i ∈ {0, 1}; with item weights w_i (default 1)

    TP = Σ w_i t_i f_i,  FN = Σ w_i t_i (1 − f_i),  FP = Σ w_i (1 − t_i) f_i,
    TN = Σ w_i (1 − t_i)(1 − f_i)

    precision   = TP / (TP + FP)            (positive predictive value)
    recall      = TP / (TP + FN)            (sensitivity, true positive rate)
    specificity = TN / (TN + FP)            (metrics guide: 860/900 = 95.6%)
    F_β         = (1 + β²) TP / ((1 + β²) TP + β² FN + FP);  F1 = 2PR / (P + R)
                  (metrics guide: P = 1.0 and R = 0.1 give F1 = 0.18, not 0.55)
    accuracy    = (TP + TN) / (TP + FP + TN + FN)

Estimand of each: the ratio of the two population totals (the rate an item drawn from the
population the suite's clusters were drawn from would show, in the metric's denominator).
Every one is a ratio of sums, so it is a weighted mean of a 0/1 value over the items in its
denominator (recall: f_i over true positives; precision: t_i over flagged items; F_β: "is a
true positive" over the non-true-negative items, weighted (1 + β²) for a true positive, β²
for a miss, 1 for a false alarm). ``harness.stats.mean_estimate`` then gives each its one
interval: the linearised ratio's cluster-robust CR2 standard error over the clusters the
items belong to (trials of one task, tasks of one cluster are not independent), Student t on
Imbens–Kolesár df, on the logit scale; Wilson over items when every item is its own unit and
weights are equal. Assumes independent clusters. A metric whose denominator is empty (nothing
flagged: no precision) is None, with the reason in ``missing``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.stats._util import as_1d_float
from harness.stats.estimate import Estimate, mean_estimate

METRICS = ("precision", "recall", "specificity", "f1", "accuracy")
"""The metrics ``classification_metrics`` reports, in the order views show them."""

EMPTY = {
    "precision": "nothing was flagged positive, so precision is undefined",
    "recall": "no item is a true positive case, so recall is undefined",
    "specificity": "no item is a true negative case, so specificity is undefined",
    "f1": "no positive case and nothing flagged, so F1 is undefined",
    "accuracy": "no items",
}


def f_beta(precision: float, recall: float, beta: float = 1.0) -> float:
    """F_β = (1 + β²)PR / (β²P + R), the weighted harmonic mean (0 when both are 0)."""
    b2 = beta * beta
    den = b2 * precision + recall
    return 0.0 if den == 0 else (1 + b2) * precision * recall / den


@dataclass(frozen=True)
class Confusion:
    """The confusion matrix: counts of items (weighted sums when items carry weights)."""

    tp: float
    fp: float
    tn: float
    fn: float

    @property
    def positives(self) -> float:
        """Items whose truth is positive (TP + FN)."""
        return self.tp + self.fn

    @property
    def negatives(self) -> float:
        """Items whose truth is negative (TN + FP)."""
        return self.tn + self.fp

    def as_dict(self) -> dict[str, float]:
        return {"tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn}


def confusion(truth: object, predicted: object, weights: object | None = None) -> Confusion:
    """The confusion matrix of 0/1 truths and predictions, one per item (optionally weighted)."""
    t, f, w = _items(truth, predicted, weights)
    return Confusion(
        tp=float(np.sum(w * t * f)),
        fp=float(np.sum(w * (1 - t) * f)),
        tn=float(np.sum(w * (1 - t) * (1 - f))),
        fn=float(np.sum(w * t * (1 - f))),
    )


@dataclass(frozen=True)
class Classification:
    """The confusion matrix and each metric with its interval (None where undefined)."""

    confusion: Confusion
    items: int
    precision: Estimate | None
    recall: Estimate | None
    specificity: Estimate | None
    f1: Estimate | None
    accuracy: Estimate | None
    beta: float = 1.0
    """The β of ``f1`` (1: F1; 2 weighs recall higher)."""
    missing: dict[str, str] = field(default_factory=dict)
    """Metric → why it is undefined."""

    def metric(self, name: str) -> Estimate | None:
        """A metric by name (one of ``METRICS``)."""
        value: Estimate | None = getattr(self, name)
        return value


def _items(
    truth: object, predicted: object, weights: object | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = as_1d_float(truth, "truth")
    f = as_1d_float(predicted, "predicted")
    if t.shape != f.shape:
        raise ValueError("truth and predicted need one value per item each")
    for name, x in (("truth", t), ("predicted", f)):
        if not np.all((x == 0) | (x == 1)):
            raise ValueError(f"{name} must be 0/1 (or booleans) per item")
    w = np.ones(t.size) if weights is None else as_1d_float(weights, "weights")
    if w.shape != t.shape or np.any(w < 0):
        raise ValueError("weights must be one non-negative value per item")
    return t, f, w


def classification_metrics(
    truth: object,
    predicted: object,
    clusters: object | None = None,
    *,
    weights: object | None = None,
    beta: float = 1.0,
    confidence: float = 0.95,
) -> Classification:
    """Precision, recall, specificity, F_β and accuracy with intervals (module docstring).

    ``truth``/``predicted``: 0/1 per item; ``clusters``: each item's independent unit (its
    task, or the task's cluster; None: items are independent); ``weights``: per item (e.g.
    1/trials of its task, so each task counts once).
    """
    if not beta > 0:
        raise ValueError("beta must be positive")
    t, f, w = _items(truth, predicted, weights)
    cl = None if clusters is None else np.asarray(clusters)
    if cl is not None and cl.shape != t.shape:
        raise ValueError("clusters must have one label per item")
    b2 = beta * beta
    tp = t * f
    # Each metric: (which items are in its denominator, the 0/1 value, extra weight).
    parts = {
        "precision": (f == 1, t, np.ones_like(t)),
        "recall": (t == 1, f, np.ones_like(t)),
        "specificity": (t == 0, 1 - f, np.ones_like(t)),
        "f1": (
            (t == 1) | (f == 1),
            tp,
            np.where(tp == 1, 1 + b2, np.where(t == 1, b2, 1.0)),
        ),
        "accuracy": (np.ones(t.size, dtype=bool), (t == f).astype(float), np.ones_like(t)),
    }
    out: dict[str, Estimate | None] = {}
    missing: dict[str, str] = {}
    for name, (keep, value, extra) in parts.items():
        keep = keep & (w > 0)
        if not np.any(keep):
            out[name], missing[name] = None, EMPTY[name]
            continue
        ww = (w * extra)[keep]
        out[name] = mean_estimate(
            value[keep],
            None if cl is None else cl[keep],
            weights=None if np.all(ww == ww[0]) else ww,
            confidence=confidence,
        )
    return Classification(
        confusion=confusion(t, f, w),
        items=int(t.size),
        beta=beta,
        missing=missing,
        precision=out["precision"],
        recall=out["recall"],
        specificity=out["specificity"],
        f1=out["f1"],
        accuracy=out["accuracy"],
    )


def trial_predictions(truth: object, passed: object) -> np.ndarray:
    """A classification task's trial as a prediction: a trial that passed answered its task's
    truth (a positive task flagged, a negative one left alone), one that failed the other."""
    t = as_1d_float(truth, "truth")
    p = np.asarray(passed, dtype=bool)
    if p.shape != t.shape:
        raise ValueError("truth and passed need one value per trial each")
    return np.where(p, t, 1 - t)
