"""The report's usage and infrastructure sections for one arm: tokens, cost, latency, steps,
crashes and unresolved trials. Pure functions over arrays; statistics from ``harness.stats``.
"""

from __future__ import annotations

import numpy as np

from harness import errors
from harness.analysis.table import FAILED_CODE, PASSED_CODE, Trials
from harness.report.records import (
    AttemptSpend,
    ClassUnresolved,
    CostSummary,
    InfraSection,
    Interval,
    Latency,
    Steps,
    Tokens,
    UsageSection,
)
from harness.report.sections import boot_name, num
from harness.stats import cluster_bootstrap_ci, effective_clusters, wilson_interval
from harness.stats.task_units import Unit

LATENCY_WARN_TRIALS = 100


def usage_section(
    arm: Trials,
    unit: Unit,
    include: np.ndarray,
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    attempt_cost: dict[str, tuple[float, int]] | None = None,
    attempts: dict[str, int] | None = None,
) -> UsageSection:
    """Tokens, cost per trial and per success, latency and steps over resolved trials; and
    what every attempt spent (``attempt_cost``, ``attempts``: per attempt outcome)."""
    resolved = (arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)
    tokens = _tokens(arm)
    cost = arm.cost[resolved]
    passed = arm.status[resolved] == PASSED_CODE
    known = ~np.isnan(cost)
    n_known = int(known.sum())
    n_unknown = int(cost.size - n_known)
    cost_out: CostSummary = {
        "scope": "resolved trials",
        "trials": int(cost.size),
        "known_trials": n_known,
        "unknown_trials": n_unknown,
        "total_usd": None,
        "per_trial_usd": None,
        "per_success_usd": None,
        "note": None,
    }
    if n_known:
        total = float(cost[known].sum())
        successes = int(passed[known].sum())
        cost_out["total_usd"] = total
        cost_out["per_trial_usd"] = _cost_ratio(
            arm, resolved, known, "trial", unit, include, n_resamples, seed, confidence
        )
        cost_out["per_success_usd"] = (
            _cost_ratio(
                arm, resolved, known, "success", unit, include, n_resamples, seed, confidence
            )
            if successes
            else None
        )
        if n_unknown:
            cost_out["note"] = (
                f"{n_unknown} of {cost.size} trials have an unknown cost ({_why_unknown(arm, resolved)}); "
                f"figures cover the {n_known} trials with a known cost"
            )
    elif cost.size:
        cost_out["note"] = f"unknown: no trial has a known cost ({_why_unknown(arm, resolved)})"
    if attempts:
        cost_out.update(attempt_spend(attempt_cost or {}, attempts))

    lat = arm.latency[resolved]
    steps = arm.steps[resolved]
    latency: Latency = {"n": int(lat.size), "unit": "trial"}
    if lat.size:
        from harness.stats import quantile_interval

        p50, p50_lo, p50_hi = quantile_interval(lat, 0.50, confidence)
        p95, p95_lo, p95_hi = quantile_interval(lat, 0.95, confidence)
        latency["p50_s"], latency["p95_s"] = p50, p95
        latency["p50_interval"], latency["p95_interval"] = [p50_lo, p50_hi], [p95_lo, p95_hi]
        latency["mean_s"] = float(lat.mean())
        latency["method"] = "order-statistic interval over trials (treats trials as independent)"
    if 0 < lat.size < LATENCY_WARN_TRIALS:
        latency["warning"] = (
            f"only {lat.size} trials (< {LATENCY_WARN_TRIALS}): percentiles, p95 above all, "
            "are unstable"
        )
    steps_out: Steps = {"n": int(steps.size)}
    if steps.size:
        s50, s95 = np.percentile(steps, [50, 95])
        steps_out["mean"], steps_out["p50"] = float(steps.mean()), float(s50)
        steps_out["p95"] = float(s95)
    return {"tokens": tokens, "cost": cost_out, "latency": latency, "steps": steps_out}


def _tokens(arm: Trials) -> Tokens:
    """Token sums and means per trial over the completed trials whose usage is known."""
    n_completed = len(arm)
    n_known = int(arm.usage_known.sum())
    tok = [int(arm.tokens_in.sum()), int(arm.tokens_cached.sum()), int(arm.tokens_out.sum())]
    sums = [t if n_known else None for t in tok]
    means = [num(t / n_known) if n_known else None for t in tok]
    unknown = n_completed - n_known
    note = None
    if unknown:
        note = f"{unknown} of {n_completed} trials had no usage reported by the model endpoint " + (
            f"(tokens unknown); token figures cover the {n_known} trials with known usage"
            if n_known
            else "(tokens unknown): no trial's tokens are known"
        )
    return {
        "in": sums[0],
        "cached": sums[1],
        "out": sums[2],
        "per_trial": {"in": means[0], "cached": means[1], "out": means[2]},
        "trials": n_completed,
        "known_trials": n_known,
        "unknown_trials": unknown,
        "note": note,
    }


def _why_unknown(arm: Trials, resolved: np.ndarray) -> str:
    """Why resolved trials have no cost: no usage reported, or no price for the model."""
    unknown = np.isnan(arm.cost[resolved])
    no_usage = int((unknown & ~arm.usage_known[resolved]).sum())
    no_price = int(unknown.sum()) - no_usage
    parts = [f"{no_usage} with no usage reported"] if no_usage else []
    parts += [f"{no_price} with an unknown price"] if no_price else []
    return ", ".join(parts)


def _cost_ratio(
    arm: Trials,
    resolved: np.ndarray,
    known: np.ndarray,
    per: str,
    unit: Unit,
    include: np.ndarray,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> Interval:
    """Σ cost / Σ trials (or successes) over known-cost trials, cluster-bootstrap interval."""
    t = arm.task_ids.size
    task = arm.task_index[resolved][known]
    cost = arm.cost[resolved][known]
    denom = (
        np.ones(cost.size)
        if per == "trial"
        else (arm.status[resolved][known] == PASSED_CODE).astype(float)
    )
    num_t = np.bincount(task, weights=cost, minlength=t)
    den_t = np.bincount(task, weights=denom, minlength=t)
    has = np.bincount(task, minlength=t) > 0
    clusters = None
    if unit.kind == "cluster":
        labels_all = np.full(t, "", dtype=object)
        labels_all[include] = unit.labels
        clusters = labels_all[has].astype(str)
    est = float(num_t.sum() / den_t.sum())
    resamples = min(n_resamples, 2000)
    out: Interval = {"estimate": est, "lo": None, "hi": None, "n": int(cost.size), "unit": "trial"}
    try:
        res = cluster_bootstrap_ci(
            np.column_stack([num_t[has], den_t[has]]),
            clusters,
            "ratio",
            confidence=confidence,
            n_resamples=resamples,
            rng=seed,
        )
        out["lo"], out["hi"] = res.ci[0], res.ci[1]
        out["method"] = (
            f"ratio of sums; percentile {boot_name(unit)} bootstrap, {resamples} resamples"
        )
    except ValueError:  # a resample with no successes: no interval
        out["method"] = "ratio of sums; no bootstrap interval (some resamples have no successes)"
    return out


def attempt_spend(
    attempt_cost: dict[str, tuple[float, int]], attempts: dict[str, int]
) -> AttemptSpend:
    """What every attempt of an arm spent, the discarded ones ('ok' is the attempt whose
    result became a trial's verdict) apart; known costs only, unknown ones counted."""
    known = sum(k for _, k in attempt_cost.values())
    discarded = {o: v for o, v in attempt_cost.items() if o != "ok"}
    return {
        "spent_usd": sum(usd for usd, _ in attempt_cost.values()) if known else None,
        "discarded_attempts": sum(n for o, n in attempts.items() if o != "ok"),
        "discarded_usd": (
            sum(usd for usd, _ in discarded.values())
            if any(k for _, k in discarded.values())
            else None
        ),
        "unknown_cost_attempts": sum(attempts.values()) - known,
    }


def infra_section(
    by_status: dict[str, int],
    attempts: dict[str, int],
    confidence: float,
    retried: int = 0,
    trials: int = 0,
) -> InfraSection:
    """Crash accounting: unresolved trials by kind, the per-attempt crash rate and the
    share of the ``trials`` completed that were ``retried``."""
    total = int(sum(attempts.values()))
    crashed = int(sum(attempts.get(outcome, 0) for outcome in errors.CRASHES))
    out: InfraSection = {
        "infra_error_trials": int(by_status.get("infra_error", 0)),
        "grader_error_trials": int(by_status.get("grader_error", 0)),
        "harness_error_trials": int(by_status.get("harness_error", 0)),
        "attempts": total,
        "attempts_by_outcome": dict(sorted(attempts.items())),
        "infra_error_attempts": crashed,
        "crash_rate": None,
        "retried_trials": retried,
        "retry_rate": None,
    }
    if trials:
        out["retry_rate"] = _wilson_rate(retried, trials, "trial", confidence, "trials of one task")
    if total:
        out["crash_rate"] = _wilson_rate(
            crashed, total, "attempt", confidence, "attempts of one trial"
        )
    return out


def _wilson_rate(k: int, n: int, unit: str, confidence: float, correlated: str) -> Interval:
    lo, hi = wilson_interval(k, n, confidence)
    return {
        "estimate": k / n,
        "lo": float(lo),
        "hi": float(hi),
        "n": n,
        "unit": unit,
        "confidence": confidence,
        "method": f"Wilson score interval over {unit}s ({correlated} may be correlated)",
    }


def unresolved_by_class(
    classes: np.ndarray,
    resolved: np.ndarray,
    confidence: float,
) -> list[ClassUnresolved]:
    """Per task class: trials, trials without a verdict, and their share (Wilson over trials,
    which may be correlated within a task). ``classes`` and ``resolved`` are per trial."""
    if classes.size == 0:
        return []
    names, codes = np.unique(classes.astype(str), return_inverse=True)
    trials = np.bincount(codes.reshape(-1), minlength=names.size)
    unresolved = np.bincount(
        codes.reshape(-1), weights=(~resolved).astype(float), minlength=names.size
    ).astype(int)
    lo, hi = wilson_interval(unresolved.astype(float), trials.astype(float), confidence)
    return [
        {
            "name": str(names[i]),
            "trials": int(trials[i]),
            "unresolved": int(unresolved[i]),
            "estimate": float(unresolved[i] / trials[i]),
            "lo": float(lo[i]),
            "hi": float(hi[i]),
            "n": int(trials[i]),
            "unit": "trial",
            "confidence": confidence,
            "method": "Wilson score interval over trials",
        }
        for i in range(names.size)
    ]


def effective_cluster_count(clusters: np.ndarray) -> float:
    """Effective number of clusters J²/Σ J_r² (agent-evaluation guide) for per-task cluster labels."""
    return effective_clusters(clusters.astype(str)) if clusters.size else 0.0
