"""Typed shapes of the records the report data repeats (see ``harness.report.data``)."""

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
    method: str
    """How the interval was computed, in words."""
    se: float | None
    warning: str | None
    note: str | None


class PassAtK(Interval, total=False):
    """pass^k or pass@k at one k."""

    k: int


class SliceRow(Interval, total=False):
    """Success on one class or cluster of tasks."""

    name: str
    tasks: int
    trials: int


class PairTable(TypedDict, total=False):
    """Paired tasks by outcome in baseline and candidate."""

    both_pass: int
    fixed: int
    broke: int
    both_fail: int


class ArmRate(TypedDict, total=False):
    """One arm's success rate inside a comparison."""

    rate: float | None
    lo: float | None
    hi: float | None
    n: int


class Comparison(Interval, total=False):
    """The paired comparison of candidate against baseline (``paired_comparison``)."""

    baseline_arm: str
    candidate_arm: str
    n_tasks: int
    n_clusters: int
    table: PairTable
    test: str
    p_value: float | None
    estimator: str
    design: str
    baseline: ArmRate
    candidate: ArmRate
    fixed_rule: str
    interval_warning: str | None
