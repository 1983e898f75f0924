"""The paired comparison every view shows: candidate − baseline, its class screens, and the
A/A noise floor, each computed by one call with the run's ``Settings``.

``harness report`` (its primary comparison and per-class deltas, in every format),
``compare``, ``gate`` and ``history`` call these, so an estimate, its interval, n and unit
are the same number wherever they are printed.
"""

from __future__ import annotations

from harness.analysis.settings import Settings
from harness.analysis.table import Trials
from harness.release.floor import noise_floor, uses_common_random_numbers
from harness.release.records import Comparison, NoiseFloor, Screens
from harness.release.run_config import StoredConfig


def compare_arms(
    baseline: Trials, candidate: Trials, settings: Settings, confidence: float | None = None
) -> Comparison:
    """The paired comparison of two arms' trials under the run's settings (``confidence``:
    another interval level, e.g. the gate's one-sided reading)."""
    from harness.release.compare import paired_comparison

    return paired_comparison(
        baseline,
        candidate,
        confidence=settings.confidence if confidence is None else confidence,
        cluster_key=settings.cluster_key,
        denominator=settings.denominator,
        phase_one_trials=settings.phase_one_trials,
    )


def aa_floor(
    baseline: Trials,
    aa_trials: Trials,
    aa: str,
    settings: Settings,
    config: StoredConfig | None,
    confidence: float | None = None,
) -> NoiseFloor | None:
    """The A/A arm's comparison against its baseline as the noise floor record."""
    c = compare_arms(baseline, aa_trials, settings, confidence)
    crn = uses_common_random_numbers(config, aa)
    return noise_floor(c, aa, common_random_numbers=crn)


def screens(
    baseline: Trials,
    candidate: Trials,
    headline: Comparison,
    settings: Settings,
    alpha: float | None = None,
    flat: bool | None = None,
) -> Screens:
    """Per-class screens of the comparison whose headline is ``headline`` (Holm-adjusted,
    "look here" only). A flat headline (``flat``, else: its interval holds 0) enables the
    opposite-moves callout."""
    from harness.release.slices import class_screens

    if flat is None:
        lo, hi = headline.get("lo"), headline.get("hi")
        flat = bool(
            headline["estimate"] is not None and lo is not None and hi is not None and lo <= 0 <= hi
        )
    return class_screens(
        baseline,
        candidate,
        alpha=1 - settings.confidence if alpha is None else alpha,
        cluster_key=settings.cluster_key,
        denominator=settings.denominator,
        headline_flat=flat,
        phase_one_trials=settings.phase_one_trials,
    )
