"""Typed shapes of the records the report data repeats (see ``harness.report.data``)."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


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


PerTrialTokens = TypedDict(
    "PerTrialTokens", {"in": float | None, "cached": float | None, "out": float | None}
)
Tokens = TypedDict(
    "Tokens",
    {
        "in": int | None,
        "cached": int | None,
        "out": int | None,
        "per_trial": PerTrialTokens,
        "trials": int,
        "known_trials": int,
        "unknown_trials": int,
        "note": str | None,
    },
)
"""Token sums over an arm's trials with known usage (``cached`` is part of ``in``) and the
mean per such trial; None when no trial's usage is known. ``unknown_trials``: trials whose
model endpoint reported no usage (never counted as zero tokens)."""


class CostSummary(TypedDict):
    """Cost over resolved trials with a known price (unknown is never counted as zero)."""

    scope: str
    trials: int
    known_trials: int
    unknown_trials: int
    total_usd: float | None
    per_trial_usd: Interval | None
    per_success_usd: Interval | None
    note: str | None


class Latency(TypedDict, total=False):
    """Seconds per resolved trial: median and 95th percentile with order-statistic intervals."""

    n: int
    unit: str
    p50_s: float
    p95_s: float
    p50_interval: list[float]
    p95_interval: list[float]
    mean_s: float
    method: str
    warning: str


class Steps(TypedDict, total=False):
    n: int
    mean: float
    p50: float
    p95: float


class UsageSection(TypedDict):
    tokens: Tokens
    cost: CostSummary
    latency: Latency
    steps: Steps


class InfraSection(TypedDict):
    """Crash accounting: unresolved trials by kind and the per-attempt crash rate."""

    infra_error_trials: int
    grader_error_trials: int
    harness_error_trials: int
    attempts: int
    attempts_by_outcome: dict[str, int]
    infra_error_attempts: int
    crash_rate: Interval | None


class ReportSettings(TypedDict):
    """How the report counts and intervals, as the run's suite declares them."""

    confidence: float
    denominator: str
    """'failure' (unresolved trials count as failures) or 'exclude'."""
    denominator_text: str
    cluster_key: str
    k: Any
    """The suite's ``report.k`` (pass^k values to show), as written."""
    primary: dict[str, str] | None
    """The suite's ``report.primary``: baseline and candidate arm names."""
    phase_one_trials: int | None
    n_resamples: NotRequired[int]
    """Bootstrap resamples of the report's intervals (set when the report is built)."""
    prediction_resamples: NotRequired[int]
    bootstrap_seed: NotRequired[int]


class Versions(TypedDict):
    """What the numbers came from: versions, seed, sandbox and the pinned images."""

    harness_version: str | None
    config_hash: str | None
    seed: int | None
    sandbox: str | None
    image_ids: dict[str, str | None]
    trial_image_ids: list[str]
    grader_versions: dict[str, list[str]]


class DiagramBin(TypedDict):
    """One non-empty bin of the reliability diagram."""

    confidence: float
    """Mean stated confidence of the bin's trials."""
    success: float
    n: int
