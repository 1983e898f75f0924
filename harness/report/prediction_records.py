"""The report's records of pass^k and pass@k: observed at one k, and predicted beyond the
trials run (``harness.report.sections``); re-exported by ``harness.report.records``."""

from __future__ import annotations

from typing import TypedDict

from harness.stats.records import Interval


class PassAtK(Interval, total=False):
    """pass^k or pass@k at one k."""

    k: int


class PredictionCheck(TypedDict, total=False):
    """The fit checked at the largest observed k against the unbiased estimate there."""

    k: int
    fitted: float | None
    fitted_interval: list[float | None]
    observed_unbiased: float | None
    observed_interval: list[float | None] | None
    n: int
    unit: str
    p_value: float | None
    """The G² goodness-of-fit test of the model against the per-task pass counts."""
    df: int | None


class Prediction(TypedDict, total=False):
    """pass^k (or pass@k) beyond the observed k, from the fitted Beta model: a prediction,
    never a measurement."""

    prediction: bool
    estimand: str
    ks: list[int]
    points: list[PassAtK]
    a: float | None
    b: float | None
    degenerate: str | None
    """Why the fit is degenerate (no spread of task rates to fit: a and b sit at the
    concentration cap and are not printed as numbers); None for a real fit."""
    method: str
    check: PredictionCheck
    note: str
    n_tasks: int
    model: str | None
    """'beta-binomial', or with an always-pass share, a never-pass share, or both
    (``harness.stats.passk_predict.MODELS``)."""
    always_pass: float | None
    """The fitted share of tasks that always pass."""
    never_pass: float | None
    """The fitted share of tasks that never pass."""
    withheld: str
    """Why no prediction is shown (the model failed its check, or cannot be checked)."""


__all__ = ["PassAtK", "Prediction", "PredictionCheck"]
