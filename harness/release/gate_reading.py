"""Reading a gate's rule on bounds: the interval level its bounds come from, the verdict and
the sentence behind it, and the arms it judges. Shared by the gate (``harness.release.gate``),
its reading of corrected rates (``gate_quantity``) and of a subset's full-suite estimate
(``subset_gate``), which the gate itself calls: kept below all three."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.config.roles import Roles

if TYPE_CHECKING:
    from harness.config.models import GatePolicy
    from harness.release.records import Comparison
    from harness.release.run_config import StoredSuite


def interval_level(policy, confidence: float | None = None) -> float:
    """Two-sided interval level whose bounds are the policy's bounds (at ``confidence``,
    default the policy's; a sequential look passes its spent level)."""
    c = policy.confidence if confidence is None else confidence
    return 2 * c - 1 if policy.sides == "one-sided" else c


def primary_verdict(
    comparison: Comparison, policy, confidence: float | None = None
) -> tuple[str, str]:
    """(verdict, the sentence behind it) for a ``paired_comparison`` result under ``policy``.

    ``comparison`` must have been computed at ``interval_level(policy, confidence)``.
    """
    lo, hi = comparison.get("lo"), comparison.get("hi")
    if comparison.get("estimate") is None or lo is None or hi is None:
        return "no-verdict", "no task has a verdict in both arms: nothing to compare"
    import numpy as np

    from harness.stats import GateRule
    from harness.stats.gate_rule import VERDICT_NAMES

    rule = GateRule.of(policy, confidence)
    c, alpha = rule.confidence, rule.alpha
    bound = "one-sided" if policy.sides == "one-sided" else "two-sided"
    ci = f"{bound} {_level(c)} bounds [{lo:+.3f}, {hi:+.3f}]"
    pv = comparison.get("p_values") or {}
    code = rule.verdicts(
        np.array([lo]),
        np.array([hi]),
        np.array([pv.get("greater", 1.0)]),
        np.array([pv.get("less", 1.0)]),
        np.array([pv.get("two-sided", 1.0)]),
    )
    v = VERDICT_NAMES[int(code[0])]
    if policy.rule == "non-inferiority":
        m = policy.margin
        why = {
            "non-inferior": f"lower bound {lo:+.3f} > {-m:+.3f} (−margin) ({ci}); "
            "this bounds the loss, it does not show a gain",
            "regression": f"upper bound {hi:+.3f} < {-m:+.3f} (−margin) ({ci})",
            "inconclusive": f"the interval crosses {-m:+.3f} (−margin) ({ci})",
        }[v]
        return v, why
    test = comparison["test"]
    p_up = pv["greater"] if policy.sides == "one-sided" else pv["two-sided"]
    p_down = pv["less"] if policy.sides == "one-sided" else pv["two-sided"]
    if v == "improvement":
        return v, f"lower bound {lo:+.3f} > 0 and {test} p = {p_up:.3g} ≤ {alpha:.3g}"
    if v == "regression":
        return v, f"upper bound {hi:+.3f} < 0 and {test} p = {p_down:.3g} ≤ {alpha:.3g}"
    return "inconclusive", (
        f"improvement not shown: {ci}, {test} p = {p_up:.3g} (needs lower bound > 0 and "
        f"p ≤ {alpha:.3g}); not a regression either"
    )


def _level(c: float) -> str:
    """A confidence level in words: 95%, or 99.9986% for a sequential look."""
    return f"{c:.0%}" if round(c, 2) == c else f"{c:.4%}"


def bound_words(policy, confidence: float) -> str:
    """The bounds' kind and level in words: 'one-sided 95%'."""
    return f"{'one-sided' if policy.sides == 'one-sided' else 'two-sided'} {_level(confidence)}"


def bar_verdict(lo: float, hi: float, bar: float, ci: str) -> tuple[str, str]:
    """(verdict, why) of the threshold rule on a rate's bounds: above, below or across."""
    if lo > bar:
        return "improvement", f"meets the bar: lower bound {lo:.3f} > {bar:.3f} ({ci})"
    if hi < bar:
        return "regression", f"below the bar: upper bound {hi:.3f} < {bar:.3f} ({ci})"
    return "inconclusive", f"the interval crosses the bar {bar:.3f} ({ci})"


def gate_roles(policy: GatePolicy, suite: StoredSuite, arms: list[str]) -> Roles:
    """The run's roles with the policy's pair first; a threshold rule without a declared
    pair on a run with one arm (besides A/A copies) judges that arm alone."""
    from harness.analysis import run_roles
    from harness.errors import ConfigError

    gate = (policy.primary.baseline, policy.primary.candidate) if policy.primary else None
    roles = run_roles(suite, arms, gate)
    if policy.rule == "threshold" and roles.candidate is None and roles.source == "order":
        return roles._replace(baseline=None, candidate=roles.baseline, aa=None)
    if roles.candidate is None:
        raise ConfigError("gate", "primary", "the run has fewer than two arms to compare")
    for arm in (roles.baseline, roles.candidate):
        if arm not in arms:
            raise ConfigError("gate", "primary", f"the run has no arm '{arm}' ({', '.join(arms)})")
    return roles
