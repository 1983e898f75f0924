"""One settings object for every analysis of a run: read once from the run's stored suite.

``harness report``, ``compare``, ``gate``, ``history`` and ``plan`` all take the confidence,
the independent unit (``report.cluster_key``), the denominator policy and the phase-one trial
count from here, so no view computes a comparison with a setting another view lacks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.release.run_config import StoredSuite

ESTIMAND = (
    "expected success rate of the arm on a task drawn uniformly from the suite's tasks, "
    "one trial per task (mean of per-task success rates; each task counts once)"
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
    estimand: str = ESTIMAND

    @property
    def denominator_text(self) -> str:
        return DENOMINATOR_TEXT.get(self.denominator, self.denominator)

    def at(self, confidence: float | None) -> Settings:
        """The same settings at another confidence (a command's ``--confidence``)."""
        return self if confidence is None else replace(self, confidence=float(confidence))


def settings_of(suite: StoredSuite, trials_per_task: int | None = None) -> Settings:
    """The settings a run's stored suite declares, with defaults. ``trials_per_task``: the
    run's own count (a ``--trials`` override), else the suite's ``trials``."""
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
    )
