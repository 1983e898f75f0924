"""Release verdicts from an interval on candidate − baseline, allowed to be inconclusive."""

from __future__ import annotations

from typing import Literal

Verdict = Literal["non-inferior", "regression", "inconclusive"]


def noninferiority_verdict(ci: tuple[float, float], margin: float) -> Verdict:
    """Non-inferiority reading of an interval for candidate − baseline (when-not-to-ship guide).

    With a tolerated loss ``margin`` > 0, chosen before the run:
    lower bound > −margin → "non-inferior"; upper bound < −margin → "regression";
    otherwise "inconclusive". Equality is not a pass (strict rule). Non-inferiority is not
    evidence of improvement; missing evidence must be handled before calling this.
    """
    lo, hi = ci
    if margin <= 0:
        raise ValueError("margin must be positive")
    if lo > hi:
        raise ValueError("interval bounds are reversed")
    if lo > -margin:
        return "non-inferior"
    if hi < -margin:
        return "regression"
    return "inconclusive"


def improvement_verdict(ci: tuple[float, float]) -> Literal["improved", "not shown"]:
    """Claim of improvement only when the whole interval is above zero (when-not-to-ship guide)."""
    return "improved" if ci[0] > 0 else "not shown"
