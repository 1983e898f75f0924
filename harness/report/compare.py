"""The report's primary comparison: the run's baseline against its candidate, by the one
paired comparison (``harness.analysis.paired.compare_arms``) that ``compare`` and ``gate`` use."""

from __future__ import annotations

from harness.analysis.paired import compare_arms
from harness.analysis.settings import Settings
from harness.config.roles import Roles
from harness.report.load import RunData, comparison_rows, empty_arm
from harness.report.records import Comparison


def primary_comparison(
    data: RunData, roles: Roles, settings: Settings
) -> tuple[Comparison | None, str | None]:
    """(comparison or None, warning or None) for the run's baseline and candidate. Under
    adaptive repeats the headline is the phase-one estimate (``estimator`` says so)."""
    baseline, candidate = roles.baseline, roles.candidate
    if not baseline or not candidate:
        return None, None
    rows_b = comparison_rows(baseline, data.arms.get(baseline) or empty_arm())
    rows_c = comparison_rows(candidate, data.arms.get(candidate) or empty_arm())
    try:
        result = compare_arms(rows_b, rows_c, settings)
    except Exception as exc:  # a broken comparison must not take the whole report down
        return None, f"primary comparison failed: {type(exc).__name__}: {exc}"
    out: Comparison = {"baseline_arm": baseline, "candidate_arm": candidate, **result}
    return out, None
