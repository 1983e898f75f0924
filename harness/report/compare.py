"""The report's primary comparison: the run's baseline against its candidate, by the one
paired comparison (``harness.analysis.paired.compare_arms``) that ``compare`` and ``gate`` use."""

from __future__ import annotations

from harness.analysis.load import RunTable
from harness.analysis.paired import compare_arms
from harness.analysis.settings import Settings
from harness.config.roles import Roles
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
