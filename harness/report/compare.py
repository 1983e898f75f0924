"""The primary comparison (baseline vs candidate), delegated to ``harness.release``.

The report does not implement its own paired comparison: it hands both arms' trial rows to
``harness.release.compare.paired_comparison`` and shows what it returns. When that module
is not available the section is omitted.
"""

from __future__ import annotations

from harness.report.load import RunData, comparison_rows, empty_arm
from harness.report.records import Comparison, ReportSettings


def comparison_available(settings: ReportSettings) -> bool:
    """True when the suite declares report.primary and harness.release can compare."""
    if not settings.get("primary"):
        return False
    import importlib.util

    try:
        return importlib.util.find_spec("harness.release.compare") is not None
    except (ImportError, ValueError):
        return False


def primary_comparison(
    data: RunData, settings: ReportSettings, seed: int = 0
) -> tuple[Comparison | None, str | None]:
    """(comparison dict or None, warning or None) for the suite's ``report.primary`` arms.

    Under adaptive repeats the headline is the phase-one estimate (``estimator`` says so).
    ``seed`` is unused: the comparison's interval is analytic (kept for callers)."""
    primary = settings.get("primary")
    if not primary:
        return None, None
    try:
        from harness.release.compare import paired_comparison
    except ImportError:
        return None, None
    baseline, candidate = primary["baseline"], primary["candidate"]
    rows_b = comparison_rows(baseline, data.arms.get(baseline) or empty_arm())
    rows_c = comparison_rows(candidate, data.arms.get(candidate) or empty_arm())
    try:
        result = paired_comparison(
            rows_b,
            rows_c,
            confidence=settings["confidence"],
            cluster_key=settings["cluster_key"],
            denominator=settings["denominator"],
            phase_one_trials=settings.get("phase_one_trials"),
        )
    except Exception as exc:  # a broken comparison must not take the whole report down
        return None, f"primary comparison failed: {type(exc).__name__}: {exc}"
    out: Comparison = {"baseline_arm": baseline, "candidate_arm": candidate, **result}
    return out, None
