"""How a suite's results are read: the report's settings, the release gate's policy (written
before the run), and adaptive repeats."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from harness.config.base import MAX_TRIALS, Count, Strict


class PrimaryComparison(Strict):
    baseline: str
    """the arm the candidate is compared against"""
    candidate: str
    """the arm under test"""


class ReportSettings(Strict):
    k: list[Count] | None = Field(
        None, max_length=1000, description="k values for pass@k / pass^k; default 1..trials"
    )
    cluster_key: Literal["cluster", "task"] = "cluster"
    """the independent unit intervals resample: the task's cluster, or each task"""
    primary: PrimaryComparison | None = None
    """the pre-declared comparison (default: the gate's, else the first two arms)"""
    confidence: float = Field(0.95, gt=0, lt=1)
    """the level of every interval in the report"""
    estimand: Literal["superpopulation", "fixed-suite"] = Field(
        "superpopulation",
        description="what the success interval is for: superpopulation (tasks as draws from "
        "the tasks like them: the interval counts which tasks were drawn and trial noise) or "
        "fixed-suite (this suite's own tasks, held fixed: trial noise only)",
    )

    @field_validator("k")
    @classmethod
    def _positive(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and any(k < 1 for k in v):
            raise ValueError("every k must be >= 1")
        return v


class GatePolicy(Strict):
    """A release rule, written before the run (when-not-to-ship guide: choose the rule before seeing scores).

    ``harness gate RUN`` reads it from the suite's ``gate:`` or from ``--policy FILE``.
    Effects are candidate − baseline success rates (fractions: 0.02 = two points).
    """

    primary: PrimaryComparison | None = Field(
        None, description="baseline and candidate arms; default report.primary, else arms 1, 2"
    )
    rule: Literal["non-inferiority", "improvement", "threshold"] = Field(
        description="non-inferiority (needs margin), improvement (interval and exact test > 0) "
        "or threshold (the candidate's own rate: lower bound above `bar`)"
    )
    bar: float | None = Field(
        None, gt=0, lt=1, description="threshold rule: the rate the candidate must exceed"
    )
    sequential: bool = Field(
        False,
        description="the gate is read run after run (nightly): evidence is pooled over the "
        "season's nights, at most 1 − confidence false alarms per season",
    )
    looks: int | None = Field(
        None,
        strict=True,
        ge=1,
        le=100_000,
        description="sequential: nights per season (the false-alarm statement is per season; "
        "a new season starts after it); default 60",
    )
    margin: float | None = Field(
        None, gt=0, lt=1, description="tolerated loss for non-inferiority, a rate (0.02 = 2 points)"
    )
    sides: Literal["one-sided", "two-sided"] = Field(
        "one-sided", description="one-sided: bound at `confidence`; two-sided: interval at it"
    )
    confidence: float = Field(0.95, gt=0.5, lt=1)
    """the confidence of the bound (one-sided) or interval (two-sided) the rule reads"""
    max_unresolved: float = Field(
        0.05, ge=0, le=1, description="largest share of either arm's trials without a verdict"
    )
    max_retry_gap: float = Field(
        0.05,
        ge=0,
        le=1,
        description="largest difference between the arms' shares of retried trials (or of "
        "trials without a verdict) a may-ship verdict tolerates; beyond it, and clear of noise "
        "at `confidence`, the gate says inconclusive",
    )
    quantity: Literal["raw", "corrected"] = Field(
        "raw",
        description="the rates the rule reads: raw (as graded) or, for a judged suite, "
        "corrected for the judge's error with the run's human labels (Rogan–Gladen, its "
        "interval wider for the labels' own uncertainty; `harness label` stores them)",
    )
    must_never: list[str] = Field(
        default_factory=list,
        description="task classes where any candidate failure blocks the release (asserted, "
        "never tested); tasks with must_never: true are always included",
    )
    n_resamples: int = Field(
        10_000,
        strict=True,
        ge=1000,
        le=10_000_000,
        description="no longer read: the gate's intervals are analytic (CR2 + t); accepted "
        "so existing policies still validate",
    )

    @field_validator("margin", "bar", "max_unresolved", "max_retry_gap", mode="before")
    @classmethod
    def _a_fraction(cls, value: object, info: ValidationInfo) -> object:
        """``margin: 5`` means 5 points to a reader, 500% to the gate: say so."""
        if isinstance(value, int | float) and not isinstance(value, bool) and 1 < value <= 100:
            raise ValueError(
                f"{info.field_name} is a fraction of a rate, not a percentage: write "
                f"{value / 100:g} for {value:g} points"
            )
        return value

    @model_validator(mode="after")
    def _margin(self) -> GatePolicy:
        if self.rule == "non-inferiority" and self.margin is None:
            raise ValueError("rule 'non-inferiority' needs a margin (the tolerated loss)")
        if self.rule != "non-inferiority" and self.margin is not None:
            raise ValueError("'margin' belongs to the non-inferiority rule only")
        if self.rule == "threshold" and self.bar is None:
            raise ValueError("rule 'threshold' needs a bar (the rate to exceed, e.g. 0.8)")
        if self.rule != "threshold" and self.bar is not None:
            raise ValueError("'bar' belongs to the threshold rule only")
        if self.looks is not None and not self.sequential:
            raise ValueError("'looks' needs sequential: true")
        if self.quantity == "corrected" and self.sequential:
            raise ValueError("quantity 'corrected' is read one run at a time, not sequentially")
        return self


class Repeats(Strict):
    """How many trials each task gets. ``fixed``: ``trials`` for every task. ``adaptive``:
    ``trials`` per task per arm first, then up to ``max_k`` only on tasks where the arms
    disagree or a task is unstable, the same number for every arm (eval-harness guide: cost about
    n + k·(b + c) instead of k·n). Selection is by discordance between arms, never by one
    arm's failure: there is no way to retry only failures."""

    mode: Literal["fixed", "adaptive"] = "fixed"
    """fixed: trials per task for every task; adaptive: more trials only where arms disagree"""
    max_k: int = Field(
        5, strict=True, ge=2, le=MAX_TRIALS, description="trials per task per arm on repeated tasks"
    )
    budget_trials: int | None = Field(
        None,
        strict=True,
        ge=0,
        le=MAX_TRIALS * 1000,
        description="most trials the repeat phase may add, over all arms",
    )
