"""One settings object for every analysis of a run: read once from the run's stored suite.

``harness report``, ``compare``, ``gate``, ``history`` and ``plan`` all take the confidence,
the independent unit (``report.cluster_key``), the denominator policy and the phase-one trial
count from here, so no view computes a comparison with a setting another view lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from harness.config.subset import SubsetDraw
from harness.release.run_config import StoredSuite, StoredTask

ESTIMAND = (
    "expected success rate of one trial of the arm on a task drawn from the population the "
    "suite's tasks (or clusters) are a sample of, estimated by the mean of per-task success "
    "rates (each task counts once); the interval counts which tasks were drawn and trial noise"
)
FIXED_SUITE = "fixed-suite"
ESTIMANDS = ("superpopulation", FIXED_SUITE)
"""The estimands a success interval can be for (``report.estimand``)."""
SUBSET_ESTIMAND = (
    "the full suite's expected success rate, estimated from the subset the run drew (its "
    "full-suite lines); the per-task rates and intervals of the tasks run are of those tasks"
)
DENOMINATOR_TEXT = {
    "failure": "unresolved trials (infra, grader and harness errors) count as failures",
    "exclude": "unresolved trials are excluded from every rate (and reported separately)",
}


@dataclass(frozen=True)
class Settings:
    """What a run's numbers depend on besides its trial rows."""

    confidence: float = 0.95
    cluster_key: str = "cluster"
    """'cluster' (task.cluster is the independent unit) or 'task'."""
    denominator: str = "failure"
    """'failure' (unresolved trials count as failures) or 'exclude'."""
    phase_one_trials: int | None = None
    """Under adaptive repeats, the trials per task every task got first (the unbiased
    headline reads only those); None under fixed repeats."""
    k: tuple[int, ...] | None = None
    estimand: str = "superpopulation"
    """What the success interval is for: 'superpopulation' or 'fixed-suite' (``ESTIMANDS``)."""
    positives: Mapping[str, bool] = field(default_factory=dict)
    """Task id → its truth, for the classification-style tasks (``task.positive``)."""
    subset: SubsetDraw | None = None
    """The run's declared subset (``config["subset"]``): its numbers estimate the full
    suite's (``harness.analysis.full_suite``)."""

    @property
    def denominator_text(self) -> str:
        return DENOMINATOR_TEXT.get(self.denominator, self.denominator)

    @property
    def fixed_suite(self) -> bool:
        return self.estimand == FIXED_SUITE

    def at(self, confidence: float | None) -> Settings:
        """The same settings at another confidence (a command's ``--confidence``)."""
        return self if confidence is None else replace(self, confidence=float(confidence))

    def for_estimand(self, estimand: str | None) -> Settings:
        """The same settings for another estimand (``harness report --estimand``)."""
        return self if estimand is None else replace(self, estimand=estimand)


def settings_of(
    suite: StoredSuite,
    trials_per_task: int | None = None,
    tasks: Mapping[str, StoredTask] | None = None,
    subset: SubsetDraw | None = None,
) -> Settings:
    """The settings a run's stored suite declares, with defaults. ``trials_per_task``: the
    run's own count (a ``--trials`` override), else the suite's ``trials``; ``tasks``: the
    run's stored tasks (their ``positive`` truths); ``subset``: the run's stored draw."""
    rep = suite.get("report") or {}
    adaptive = (suite.get("repeats") or {}).get("mode") == "adaptive"
    trials = trials_per_task if trials_per_task is not None else int(suite.get("trials", 1))
    k = rep.get("k")
    return Settings(
        confidence=float(rep.get("confidence", 0.95)),
        cluster_key=str(rep.get("cluster_key", "cluster")),
        denominator=str(suite.get("denominator", "failure")),
        phase_one_trials=int(trials) if adaptive else None,
        k=tuple(int(x) for x in k) if k else None,
        estimand=str(rep.get("estimand", "superpopulation")),
        positives={
            str(tid): bool(t["positive"])
            for tid, t in (tasks or {}).items()
            if isinstance(t, dict) and t.get("positive") is not None
        },
        subset=subset,
    )
