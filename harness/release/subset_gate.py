"""A subset run's gate shows the full suite's estimate beside its verdict, and why the verdict
stays on the paired subset.

The full-suite estimate (``harness.analysis.full_suite``) is about the suite's tasks as they
are: a random subset's finite-population correction shrinks its interval toward the trials'
noise alone as n nears N. A gate on a full run judges tasks like these (the paired
comparison over tasks and clusters), not only these tasks. Judging a subset run by the
full-suite estimate would therefore be easier to pass than the full run it stands for:
benchmarks/subset_gate.py measures a candidate no better on the task population shipped
6.9% of the time at 50 of 200 tasks and 8.6% at 100 of 200 (one-sided 95%, 10 trials per
task), against 5.5% and 5.4% on the paired subset and 5.1% for the full run. So the verdict
is the paired subset's (a random sample of the suite's sample of tasks, so the same
question as the full run's), and the full-suite estimate is shown with it as what the
subset says of the whole suite.
"""

from __future__ import annotations

from typing import Any

from harness.analysis import Settings
from harness.analysis.table import Trials
from harness.config.subset import SubsetDraw
from harness.stats.records import Interval


def full_suite_reading(
    trials_a: Trials, trials_b: Trials, policy: Any, settings: Settings, draw: SubsetDraw
) -> Interval:
    """The full-suite estimate of what the policy's rule reads (candidate − baseline, or
    the candidate's own rate under the threshold rule), at the policy's interval level."""
    from harness.analysis.full_suite import full_suite, full_suite_delta
    from harness.release.gate_reading import interval_level

    level = interval_level(policy, policy.confidence)
    if (k := settings.phase_one_trials) is not None:
        trials_a, trials_b = trials_a.first(k), trials_b.first(k)
    a, b = trials_a.originals(), trials_b.originals()
    if policy.rule == "threshold":
        est = full_suite(b, draw, level, settings.denominator)
        what = "the candidate's full-suite rate"
    else:
        est = full_suite_delta(a, b, draw, level, settings.denominator)
        what = "candidate − baseline on the full suite"
    return Interval(
        estimate=est.get("estimate"),
        lo=est.get("lo"),
        hi=est.get("hi"),
        se=est.get("se"),
        n=int(est.get("n") or 0),
        unit="task",
        confidence=level,
        method=est.get("label"),
        estimand=what,
    )
