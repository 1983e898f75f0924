"""A release rule read against bounds and exact tests, for one run or thousands of planted runs.

``harness gate`` reads each rule through ``GateRule.verdicts``; ``harness plan`` and the
simulations in ``benchmarks/`` run ``GateRule.paired`` / ``GateRule.threshold`` on many
samples at once, so the power a plan prints and the error rates the docs state are those of
the decision the gate will make (eval-harness guide, when-not-to-ship guide):

- ``improvement``: lower bound > 0 *and* the exact sign (McNemar) test in that direction at α;
  upper bound < 0 and the test the other way → regression; otherwise inconclusive.
- ``non-inferiority``: lower bound > −margin → non-inferior; upper bound < −margin →
  regression; otherwise inconclusive (non-inferior is not better).
- ``threshold``: the candidate's own rate: lower bound > bar → improvement ("meets the bar");
  upper bound < bar → regression ("below the bar"); otherwise inconclusive.

One-sided at confidence c reads the ends of the two-sided (2c − 1) interval and one-sided
p ≤ 1 − c; two-sided reads the c interval and two-sided p ≤ 1 − c. The paired rules read
the interval compare prints (MOVER, ``paired_intervals``, with Hall's bound of the difference
where the baseline is near 0 or 1); the threshold rule reads the
cautious decision bound of ``rate_intervals`` (a single rate near the top of the scale needs it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.stats.cluster_design import ClusterDesign

IMPROVEMENT, NON_INFERIOR, INCONCLUSIVE, REGRESSION = 0, 1, 2, 3
VERDICT_NAMES = ("improvement", "non-inferior", "inconclusive", "regression")


def _tasks_are_units(design: ClusterDesign) -> bool:
    """Every task its own cluster with equal weights: the intervals use Wilson (as the
    report's, ``mean_estimate``)."""
    return design.n_clusters == design.n and bool(np.all(design.weights == design.weights[0]))


@dataclass(frozen=True)
class GateRule:
    """The statistical part of a gate policy."""

    rule: str
    """'improvement', 'non-inferiority' or 'threshold'."""
    confidence: float = 0.95
    sides: str = "one-sided"
    margin: float | None = None
    bar: float | None = None

    @classmethod
    def of(cls, policy: Any, confidence: float | None = None) -> GateRule:
        """The rule of a ``GatePolicy`` (at ``confidence``: a sequential look's level)."""
        return cls(
            rule=str(policy.rule),
            confidence=float(policy.confidence if confidence is None else confidence),
            sides=str(policy.sides),
            margin=getattr(policy, "margin", None),
            bar=getattr(policy, "bar", None),
        )

    def _replace_bar(self, bar: float) -> GateRule:
        """The same rule read against another bar (a plan's --bar)."""
        from dataclasses import replace

        return replace(self, bar=bar)

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def interval_level(self) -> float:
        """Two-sided level whose ends are the rule's bounds."""
        return 2 * self.confidence - 1 if self.sides == "one-sided" else self.confidence

    def describe(self) -> str:
        """The rule and its test in words (what a plan assumed)."""
        side = "one-sided" if self.sides == "one-sided" else "two-sided"
        level = (
            f"{self.confidence:.0%}"
            if round(self.confidence, 2) == self.confidence
            else (f"{self.confidence:.4%}")
        )
        paired = (
            f"{side} {level} bound of the paired interval (MOVER; with the baseline within "
            "10 points of 0 or 1, also Hall's skew-corrected bound, the more cautious)"
        )
        if self.rule == "improvement":
            return (
                f"improvement: {paired} above 0 and the exact sign (McNemar) test at "
                f"α = {self.alpha:.3g}"
            )
        if self.rule == "non-inferiority":
            return f"non-inferiority at margin {self.margin:g}: {paired} above −{self.margin:g}"
        return (
            f"threshold at bar {self.bar:g}: the candidate's {side} {level} cautious bound "
            f"(logit scale: CR2, cluster jackknife, Hall) above {self.bar:g}"
        )

    def verdicts(
        self,
        lo: np.ndarray,
        hi: np.ndarray,
        p_greater: np.ndarray | None = None,
        p_less: np.ndarray | None = None,
        p_two_sided: np.ndarray | None = None,
    ) -> np.ndarray:
        """Verdict codes (``VERDICT_NAMES``) from decision bounds and sign-test p-values."""
        lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        out = np.full(lo.shape, INCONCLUSIVE)
        if self.rule == "threshold":
            assert self.bar is not None
            out[hi < self.bar] = REGRESSION
            out[lo > self.bar] = IMPROVEMENT
            return out
        if self.rule == "non-inferiority":
            assert self.margin is not None
            out[hi < -self.margin] = REGRESSION
            out[lo > -self.margin] = NON_INFERIOR
            return out
        assert p_greater is not None and p_less is not None
        if self.sides == "one-sided":
            p_up, p_down = np.asarray(p_greater), np.asarray(p_less)
        else:
            assert p_two_sided is not None
            p_up = p_down = np.asarray(p_two_sided)
        out[(hi < 0) & (p_down <= self.alpha)] = REGRESSION
        out[(lo > 0) & (p_up <= self.alpha)] = IMPROVEMENT
        return out

    def paired(
        self,
        design: ClusterDesign,
        xa: np.ndarray,
        xb: np.ndarray,
        trials: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Verdicts for (samples × tasks) per-task rates of baseline ``xa``, candidate ``xb``
        (``trials``: each arm's counted trials per task, default 1)."""
        from harness.stats.mean_intervals import paired_intervals
        from harness.stats.paired import sign_test_tails

        wilson = _tasks_are_units(design)
        iv = paired_intervals(design, xa, xb, self.interval_level, wilson=wilson, trials=trials)
        d = xb - xa
        p = sign_test_tails(np.count_nonzero(d > 0, axis=1), np.count_nonzero(d < 0, axis=1))
        return self.verdicts(iv.lo, iv.hi, p["greater"], p["less"], p["two-sided"])

    def threshold(
        self, design: ClusterDesign, x: np.ndarray, trials: np.ndarray | None = None
    ) -> np.ndarray:
        """Verdicts of the threshold rule for (samples × tasks) per-task rates."""
        from harness.stats.mean_intervals import rate_intervals

        wilson = _tasks_are_units(design)
        iv = rate_intervals(
            design, x, self.interval_level, cautious=True, wilson=wilson, trials=trials
        )
        return self.verdicts(iv.lo, iv.hi)
