"""The release gate: a rule written before the run, read against the run's trial rows.

Order of checks (eval-harness guide and when-not-to-ship guide):
1. must-never classes: any failure of the candidate there blocks the release; asserted,
   never tested; listed first.
2. unresolved coverage: if either arm has more trials without a verdict than the policy
   allows, there is no clean verdict (missing evidence is not a failure of the agent).
   Retry balance: when the arms' shares of retried trials (or of trials without a verdict)
   differ by more than ``max_retry_gap``, clear of noise, a may-ship verdict becomes
   inconclusive: an agent that turns its failures into infrastructure retries must not
   ship on them (``evidence.balance_check``).
3. the primary comparison (baseline vs candidate, named before the run): the interval for
   candidate − baseline from ``harness.stats.mean_estimate`` (the method every view uses),
   read by the rule:
   - ``non-inferiority``: lower bound > −margin → non-inferior; upper bound < −margin →
     regression; otherwise inconclusive (when-not-to-ship guide; non-inferior is not better).
   - ``improvement``: lower bound > 0 *and* the exact McNemar / sign test in that direction
     at α → improvement; upper bound < 0 and the test the other way → regression; otherwise
     inconclusive. Both must agree: the interval carries clusters and weights, the exact
     test stays honest when the discordant counts are small.
   - ``threshold``: the candidate's own rate: lower bound > bar → improvement ("meets the
     bar"); upper bound < bar → regression ("below the bar"); otherwise inconclusive; with the
     posterior P(p > bar) beside it. Same verdicts and exit codes as the comparative rules.
   Under adaptive repeats every number is the phase-one estimate (unbiased); with
   ``sequential: true`` the verdict is the season's, evidence pooled over the nights
   (``harness.release.nightly``).
   One-sided at confidence c uses the bound of the two-sided (2c − 1) interval and one-sided
   p ≤ 1 − c; two-sided uses the c interval and two-sided p ≤ 1 − c.
Beside it: the A/A delta (noise floor) when the run has an A/A arm, and class screens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from harness.analysis.table import Trials
from harness.release.gate_reading import (
    bar_verdict,
    bound_words,
    gate_roles,
    interval_level,
    primary_verdict,
)
from harness.release.records import (
    Comparison,
    Coverage,
    GatePolicyRecord,
    GateResult,
    MustNeverCheck,
    NoiseFloor,
    Sequential,
    ThresholdCheck,
)
from harness.release.run_config import StoredConfig, StoredSuite

if TYPE_CHECKING:
    from harness.config.models import GatePolicy
    from harness.config.subset import SubsetDraw
    from harness.release.nightly import Night

VERDICTS = ("improvement", "non-inferior", "inconclusive", "regression", "no-verdict")
MAY_SHIP = ("improvement", "non-inferior")


def exit_code(verdict: str, blocked_by_must_never: bool = False) -> int:
    """The documented exit code of a verdict (``harness.exitcodes``)."""
    from harness import exitcodes

    if blocked_by_must_never:
        return exitcodes.GATE_MUST_NEVER
    return {
        "improvement": exitcodes.GATE_IMPROVEMENT,
        "non-inferior": exitcodes.GATE_NON_INFERIOR,
        "inconclusive": exitcodes.GATE_INCONCLUSIVE,
        "regression": exitcodes.GATE_REGRESSION,
        "no-verdict": exitcodes.GATE_NO_VERDICT,
    }[verdict]


LABELS = {
    "threshold": {
        "improvement": "meets the bar",
        "regression": "below the bar",
        "inconclusive": "inconclusive",
        "no-verdict": "no-verdict",
    }
}
"""How a rule names the shared verdicts (exit codes stay those of ``VERDICTS``)."""

POSTERIOR_PRIOR = "uniform Beta(1, 1)"


def verdict_label(rule: str, verdict: str) -> str:
    """The verdict in the rule's own words ("meets the bar" for a threshold improvement)."""
    return LABELS.get(rule, {}).get(verdict, verdict)


def threshold_check(
    trials: Trials,
    policy,
    *,
    cluster_key: str,
    denominator: str,
    confidence: float,
    phase_one_trials: int | None = None,
) -> ThresholdCheck:
    """The candidate's own rate against ``policy.bar``: the shared interval method, one-sided
    (or two-sided) bounds at ``confidence``, and the posterior probability P(p > bar).

    Verdicts: lower bound > bar → "improvement" (meets the bar); upper bound < bar →
    "regression" (below the bar); otherwise "inconclusive". The posterior is Beta under a
    uniform prior on the effective sample size n_eff = p̂(1 − p̂)/SE² (clusters and repeats
    counted through the SE; the Beta-binomial model of the estimands guide, scaled to the design).
    """
    from harness.release.compare import task_counts, task_rates
    from harness.stats import mean_estimate, posterior_prob_above

    if phase_one_trials is not None:
        trials = trials.first(phase_one_trials)
    tasks, rates, clusters = task_rates(trials, denominator, cluster_key)
    bar = policy.bar
    out: ThresholdCheck = {"bar": bar, "n": len(tasks), "unit": "task", "prior": POSTERIOR_PRIOR}
    if not tasks:
        return {**out, "verdict": "no-verdict", "why": "the candidate has no resolved task"}
    est = mean_estimate(
        rates,
        clusters,
        kind="rate",
        confidence=interval_level(policy, confidence),
        cautious=True,
        trials=task_counts(trials, denominator)[2],
    )
    p = est.estimate
    if est.se:
        n_eff = min(p * (1 - p) / est.se**2, 1e9) if 0 < p < 1 else float(est.n_units)
    else:
        n_eff = float(est.n_units)
    prob = posterior_prob_above(p * n_eff, n_eff, bar)
    ci = f"{bound_words(policy, confidence)} bounds [{est.lo:.3f}, {est.hi:.3f}]"
    verdict, why = bar_verdict(est.lo, est.hi, bar, ci)
    return {
        **out,
        "estimate": p,
        "lo": est.lo,
        "hi": est.hi,
        "n_clusters": est.n_units if est.unit == "cluster" else len(set(clusters)),
        "method": est.method,
        "interval_warning": est.warning,
        "n_eff": n_eff,
        "p_above_bar": prob,
        "verdict": verdict,
        "why": why,
    }


# long: it is the gate's decision order (must-never, coverage, rule, A/A floor, screens), read top
#   to bottom as the module doc lists it.
def evaluate_gate(
    trials: Trials,
    policy: GatePolicy,
    *,
    arms: list[str],
    config: StoredConfig | None = None,
    trials_per_task: int = 1,
    run_id: str | None = None,
    earlier: list[Night] | None = None,
    corrected: dict[str, Any] | None = None,
) -> GateResult:
    """Apply a ``GatePolicy`` to one run's trials; returns the verdict with its numbers.

    ``config`` is the run's stored resolved config (suite settings, tasks with their
    ``must_never`` flags); the primary arms come from the policy, else the suite's primary
    comparison, else the first two arms. ``earlier``: under ``sequential``, the nights of the
    suite's earlier gated runs since the last restart (``harness.release.nightly``), oldest
    first. ``corrected``: under ``quantity: corrected``, the run's judge-corrected rates
    (``harness.release.gate_quantity.corrected_reading``), which the rule then reads.
    Pure: no store access.
    """
    from harness.analysis import settings_of
    from harness.analysis.paired import aa_floor, compare_arms
    from harness.analysis.paired import screens as class_screens
    from harness.release.adaptive import design_summary
    from harness.release.evidence import (
        balance_check,
        balance_reason,
        coverage_check,
        flagged_tasks,
        must_never_checks,
    )
    from harness.release.gate_quantity import corrected_decision
    from harness.release.quantity import RAW

    config = config or {}
    suite: StoredSuite = config.get("suite") or {}
    roles = gate_roles(policy, suite, arms)
    baseline, candidate = roles.baseline, roles.candidate
    assert candidate is not None  # _roles refuses a run without one
    settings = settings_of(suite, trials_per_task)
    trials_a = trials.of_arm(baseline) if baseline else trials.where(np.zeros(len(trials), bool))
    trials_b = trials.of_arm(candidate)

    must_never = must_never_checks(trials_b, list(policy.must_never), flagged_tasks(config))
    arm_trials = (
        {candidate: trials_b} if baseline is None else {baseline: trials_a, candidate: trials_b}
    )
    coverage = coverage_check(arm_trials, policy.max_unresolved)
    balance = balance_check(
        (baseline, trials_a) if baseline else None,
        (candidate, trials_b),
        policy.max_retry_gap,
        policy.confidence,
    )
    confidence = policy.confidence
    level = interval_level(policy, confidence)

    primary = compare_arms(trials_a, trials_b, settings, level) if baseline else None
    threshold = None
    if policy.rule == "threshold":
        threshold = threshold_check(
            trials_b,
            policy,
            cluster_key=settings.cluster_key,
            denominator=settings.denominator,
            confidence=confidence,
            phase_one_trials=settings.phase_one_trials,
        )
        stat_verdict, why = threshold["verdict"], threshold["why"]
        if "p_above_bar" in threshold:
            why += (
                f"; P(p > {policy.bar:g}) = {threshold['p_above_bar']:.3f} "
                f"(posterior, {POSTERIOR_PRIOR} prior, n_eff {threshold['n_eff']:.0f})"
            )
    else:
        assert primary is not None  # every rule but threshold compares against a baseline
        stat_verdict, why = primary_verdict(primary, policy, confidence)
    quantity = RAW
    if corrected is not None:
        raw = verdict_label(policy.rule, stat_verdict)
        stat_verdict, why, quantity = corrected_decision(corrected, policy, primary, candidate, raw)
    if settings.phase_one_trials is not None and primary is not None:
        why += f"; estimator: {primary['estimator']}"
    full = None
    if draw := config.get("subset"):
        from harness.analysis.full_suite import label
        from harness.release.subset_gate import full_suite_reading

        shown = label(draw, len(set(trials_b.task.values().tolist())))
        why += f"; on the paired subset, not the full suite ({shown})"
        full = full_suite_reading(trials_a, trials_b, policy, settings, draw)
    sequential = None
    if policy.sequential:
        stat_verdict, why, sequential = _nightly(
            trials_a, trials_b, policy, settings, run_id, earlier, why, config.get("subset")
        )

    noise = None
    if baseline and roles.aa and roles.aa in trials.arm.present():
        # the floor is read as the run's noise, at the policy's two-sided level (the decision
        # level 2c − 1 would flag a clean A/A arm in one run in ten)
        noise = aa_floor(
            trials_a, trials.of_arm(roles.aa), roles.aa, settings, config, policy.confidence
        )

    violated = [c for c in must_never if c["status"] == "violated"]
    reasons = _blocking_reasons(must_never, coverage, policy.max_unresolved)
    verdict = "no-verdict" if reasons else stat_verdict
    reasons = reasons or [why]
    unbalanced = balance_reason(balance)
    if verdict in MAY_SHIP and unbalanced:
        verdict, reasons = "inconclusive", [unbalanced, f"(the statistics alone: {why})"]
    headline_flat = stat_verdict not in ("improvement", "regression")
    screens = None
    if baseline:
        assert primary is not None
        screens = class_screens(
            trials_a, trials_b, primary, settings, alpha=1 - policy.confidence, flat=headline_flat
        )
    counts = {arm: _trials_per_task(t) for arm, t in arm_trials.items()}
    design = design_summary(suite.get("repeats"), trials_per_task, counts)
    warnings = _gate_warnings(noise, threshold if threshold is not None else primary, primary)
    primary_out: Comparison | None = None
    if primary is not None:
        primary_out = {**primary, "verdict": stat_verdict, "why": why, "interval_level": level}
        if threshold is not None:
            primary_out["verdict"] = "reference only (the threshold rule reads the candidate alone)"
    return {
        "run_id": run_id,
        "verdict": verdict,
        "verdict_label": verdict_label(policy.rule, verdict),
        "may_ship": verdict in MAY_SHIP,
        "blocked_by_must_never": bool(violated),
        "exit_code": exit_code(verdict, bool(violated)),
        "reasons": reasons,
        "policy": policy_record(policy),
        "baseline": baseline,
        "candidate": candidate,
        "must_never": must_never,
        "coverage": coverage,
        "balance": balance,
        "primary": primary_out,
        "threshold": threshold,
        "full_suite": full,
        "sequential": sequential,
        "noise_floor": noise,
        "screens": screens,
        "design": design,
        "warnings": warnings,
        "cannot_establish": _limits(policy, stat_verdict),
        "quantity": quantity,
    }


def _blocking_reasons(
    must_never: list[MustNeverCheck], coverage: Coverage, max_unresolved: float
) -> list[str]:
    """Why there is no verdict whatever the statistics say: violated or unverified
    must-never checks, too many trials without a verdict. Empty when nothing blocks."""
    reasons = [
        f"{c['name']} {c['status']}: {c['message']}"
        for status in ("violated", "unverified")
        for c in must_never
        if c["status"] == status
    ]
    if coverage["status"] == "exceeded":
        worst = ", ".join(
            f"{arm} {a['unresolved']}/{a['trials']} ({a['share']:.1%})"
            for arm, a in coverage["arms"].items()
            if a["share"] > max_unresolved
        )
        reasons.append(
            f"trials without a verdict: {worst}, over max_unresolved "
            f"{max_unresolved:.1%}: repair the infrastructure or graders and re-run"
        )
    return reasons


def _gate_warnings(
    noise: NoiseFloor | None,
    head: ThresholdCheck | Comparison | None,
    primary: Comparison | None,
) -> list[str]:
    """What the reader must know before trusting the numbers: a moved or degenerate A/A
    floor, the headline interval's own warning, tasks left unpaired."""
    warnings: list[str] = []
    if noise and noise["degenerate"]:
        warnings.append(noise["degenerate_reason"] or "degenerate noise floor")
    elif noise and noise["excludes_zero"]:
        warnings.append(
            f"the A/A arm moved ({noise['estimate']:+.3f}, interval excludes 0): the run is "
            "noisier than its intervals assume (drift, leaking state, or a nondeterministic grader)"
        )
    head_warning = head.get("interval_warning") if head else None
    if head_warning:
        warnings.append(head_warning)
    if primary and primary["dropped"]["n"]:
        warnings.append(f"{primary['dropped']['n']} task(s) not in both arms were left unpaired")
    return warnings


def _nightly(
    trials_a: Trials,
    trials_b: Trials,
    policy: GatePolicy,
    settings,
    run_id: str | None,
    earlier: list[Night] | None,
    tonight_why: str,
    draw: SubsetDraw | None = None,
) -> tuple[str, str, Sequential | None]:
    """The season's verdict with this run as its latest night (``harness.release.nightly``;
    a subset run's night is its full-suite estimate)."""
    from harness.release.nightly import Night, night_reading, season_reading

    reading = night_reading(trials_a, trials_b, policy, settings, draw)
    if reading is None:
        return "no-verdict", "no task has a verdict tonight: nothing to add to the season", None
    nights = [*(earlier or []), Night(run_id or "this run", *reading)]
    verdict, why, record = season_reading(nights, policy)
    return verdict, f"{why} (tonight alone: {tonight_why})", record


def _limits(policy, verdict: str) -> list[str]:
    out = [
        "performance on tasks outside this suite's population",
        "grader errors the graders "
        "themselves cannot see (a precise estimate of wrongly labelled outcomes)",
    ]
    if policy.rule == "non-inferiority":
        out.insert(0, "that the candidate is better: non-inferiority only bounds the loss")
    if verdict == "inconclusive":
        out.insert(
            0,
            "equivalence: 'no regression shown' is not 'no regression'; keep the "
            "baseline, add independent tasks or repeats on the discordant ones",
        )
    return out


def policy_record(policy: GatePolicy) -> GatePolicyRecord:
    """The policy as the gate's JSON states it (its pydantic dump)."""
    return cast("GatePolicyRecord", policy.model_dump(mode="json"))


def _trials_per_task(trials: Trials) -> list[int]:
    """Trials of the task as written (no variants) per task, in sorted task order."""
    originals = np.bincount(
        trials.task_index, weights=trials.is_original, minlength=len(trials.task_ids)
    )
    return originals.astype(int).tolist()
