"""The report's primary comparison: the run's baseline against its candidate, by the one
paired comparison (``harness.analysis.paired.compare_arms``) that ``compare`` and ``gate`` use,
and the candidate's must-never checks, by the gate's own (``harness.release.evidence``)."""

from __future__ import annotations

import numpy as np

from harness.analysis.load import RunTable
from harness.analysis.paired import compare_arms
from harness.analysis.settings import Settings
from harness.config.roles import Roles
from harness.release.evidence import must_never_record
from harness.release.records import MustNever
from harness.release.run_config import StoredSuite
from harness.report.records import Comparison


def primary_comparison(
    data: RunTable, roles: Roles, settings: Settings
) -> tuple[Comparison | None, str | None]:
    """(comparison or None, warning or None) for the run's baseline and candidate. Under
    adaptive repeats the headline is the phase-one estimate (``estimator`` says so)."""
    baseline, candidate = roles.baseline, roles.candidate
    if not baseline or not candidate:
        return None, None
    trials = data.trials
    try:
        result = compare_arms(trials.of_arm(baseline), trials.of_arm(candidate), settings)
    except Exception as exc:  # a broken comparison must not take the whole report down
        return None, f"primary comparison failed: {type(exc).__name__}: {exc}"
    out: Comparison = {"baseline_arm": baseline, "candidate_arm": candidate, **result}
    return out, None


def must_never_section(
    data: RunTable, roles: Roles, suite: StoredSuite, flagged: set[str]
) -> MustNever:
    """The candidate's (a one-arm run's only arm's) must-never checks: the classes the
    suite's gate names and the tasks flagged ``must_never``, whether or not a gate is
    declared, so the report shows them beside fixed/broke in every case."""
    arm = roles.candidate or roles.baseline
    gate = suite.get("gate")
    classes = [str(c) for c in gate.get("must_never") or []] if gate else []
    trials = data.trials
    judged = trials.of_arm(arm) if arm else trials.where(np.zeros(len(trials), dtype=bool))
    return must_never_record(arm, judged, classes, flagged)
