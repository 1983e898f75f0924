"""The record every estimate is reported as: a number, its interval, what n counts, and how."""

from __future__ import annotations

from typing import TypedDict


class Interval(TypedDict, total=False):
    """An estimate with its interval: every rate, delta and cost record in the report.

    A record without a computable interval has ``lo``/``hi`` None; one without any counted
    unit has ``estimate`` None.
    """

    estimate: float | None
    lo: float | None
    hi: float | None
    n: int
    """How many independent units the interval rests on."""
    unit: str
    """What ``n`` counts: 'task', 'trial', 'attempt', 'cluster'."""
    confidence: float
    method: str | None
    """How the interval was computed, in words."""
    se: float | None
    warning: str | None
    note: str | None
    estimand: str
    """What the estimate estimates, in words."""
    method_key: str
    """The method's short machine name (``harness.stats.mean_estimate``)."""
    n_clusters: int
