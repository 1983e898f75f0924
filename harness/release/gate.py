"""The release gate: a rule written before the run, read against the run's trial rows.

Order of checks (seed 001, seed 004):
1. must-never classes: any failure of the candidate there blocks the release; asserted,
   never tested; listed first.
2. unresolved coverage: if either arm has more trials without a verdict than the policy
   allows, there is no clean verdict (missing evidence is not a failure of the agent).
3. the primary comparison (baseline vs candidate, named before the run): a paired cluster
   bootstrap interval for candidate − baseline, read by the rule:
   - ``non-inferiority``: lower bound > −margin → non-inferior; upper bound < −margin →
     regression; otherwise inconclusive (seed 004; non-inferior is not better).
   - ``improvement``: lower bound > 0 *and* the exact McNemar / sign test in that direction
     at α → improvement; upper bound < 0 and the test the other way → regression; otherwise
     inconclusive. Both must agree: the interval carries clusters and weights, the exact
     test stays honest when the discordant counts are small.
   One-sided at confidence c uses the bound of the two-sided (2c − 1) interval and one-sided
   p ≤ 1 − c; two-sided uses the c interval and two-sided p ≤ 1 − c.
Beside it: the A/A delta (noise floor) when the run has an A/A arm, and class screens.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

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


def interval_level(policy) -> float:
    """Two-sided interval level whose bounds are the policy's bounds."""
    c = policy.confidence
    return 2 * c - 1 if policy.sides == "one-sided" else c


def primary_verdict(comparison: dict[str, Any], policy) -> tuple[str, str]:
    """(verdict, the sentence behind it) for a ``paired_comparison`` result under ``policy``.

    ``comparison`` must have been computed at ``interval_level(policy)``.
    """
    if comparison.get("estimate") is None:
        return "no-verdict", "no task has a verdict in both arms: nothing to compare"
    lo, hi = comparison["lo"], comparison["hi"]
    alpha = 1 - policy.confidence
    bound = "one-sided" if policy.sides == "one-sided" else "two-sided"
    ci = f"{bound} {policy.confidence:.0%} bounds [{lo:+.3f}, {hi:+.3f}]"
    if policy.rule == "non-inferiority":
        from harness.stats import noninferiority_verdict

        m = policy.margin
        v = noninferiority_verdict((lo, hi), m)
        why = {
            "non-inferior": f"lower bound {lo:+.3f} > {-m:+.3f} (−margin) ({ci}); "
            "this bounds the loss, it does not show a gain",
            "regression": f"upper bound {hi:+.3f} < {-m:+.3f} (−margin) ({ci})",
            "inconclusive": f"the interval crosses {-m:+.3f} (−margin) ({ci})",
        }[v]
        return v, why
    pv = comparison["p_values"]
    test = comparison["test"]
    if policy.sides == "one-sided":
        p_up, p_down = pv["greater"], pv["less"]
    else:
        p_up = p_down = pv["two-sided"]
    if lo > 0 and p_up <= alpha:
        return "improvement", f"lower bound {lo:+.3f} > 0 and {test} p = {p_up:.3g} ≤ {alpha:.3g}"
    if hi < 0 and p_down <= alpha:
        return "regression", f"upper bound {hi:+.3f} < 0 and {test} p = {p_down:.3g} ≤ {alpha:.3g}"
    return "inconclusive", (
        f"improvement not shown: {ci}, {test} p = {p_up:.3g} (needs lower bound > 0 and "
        f"p ≤ {alpha:.3g}); not a regression either"
    )


def _must_never(
    rows_b: list[dict], classes: list[str], flagged_tasks: set[str]
) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []
    groups: dict[str, list[dict]] = {f"class {c}": [] for c in classes}
    if flagged_tasks:
        groups["tasks marked must_never"] = []
    for r in rows_b:
        cls = r.get("task_class") or "default"
        if cls in classes:
            groups[f"class {cls}"].append(r)
        if r["task_id"] in flagged_tasks:
            groups["tasks marked must_never"].append(r)
    for name, rows in groups.items():
        failed = sorted(
            {f"{r['task_id']}#{r['trial_index']}" for r in rows if r["status"] == "failed"}
        )
        unresolved = sorted(
            {
                f"{r['task_id']}#{r['trial_index']}"
                for r in rows
                if r["status"] not in ("passed", "failed")
            }
        )
        status = "violated" if failed else "unverified" if (unresolved or not rows) else "held"
        checks.append(
            {
                "name": f"must-never: {name}",
                "status": status,
                "trials": len(rows),
                "failures": failed,
                "unresolved": unresolved,
                "message": (
                    f"{len(failed)} failure(s) of the candidate: {', '.join(failed[:10])}"
                    if failed
                    else f"{len(unresolved)} trial(s) without a verdict"
                    if unresolved
                    else "no trials of the candidate in this class"
                    if not rows
                    else f"0 failures in {len(rows)} trials (asserted, not tested)"
                ),
            }
        )
    return checks


def _coverage(rows: dict[str, list[dict]], limit: float) -> dict[str, Any]:
    arms: dict[str, Any] = {}
    by_class: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for arm, rs in rows.items():
        unresolved = sum(1 for r in rs if r["status"] not in ("passed", "failed"))
        arms[arm] = {
            "trials": len(rs),
            "unresolved": unresolved,
            "share": unresolved / len(rs) if rs else 1.0,
        }
        for r in rs:
            c = by_class[r.get("task_class") or "default"][arm]
            c[0] += r["status"] not in ("passed", "failed")
            c[1] += 1
    worst = max((a["share"] for a in arms.values()), default=1.0)
    return {
        "name": "unresolved coverage",
        "limit": limit,
        "arms": arms,
        "by_class": {
            cls: {arm: {"unresolved": u, "trials": n} for arm, (u, n) in d.items()}
            for cls, d in sorted(by_class.items())
            if any(u for u, _ in d.values())
        },
        "worst_share": worst,
        "status": "ok" if worst <= limit else "exceeded",
    }


def evaluate_gate(
    rows: list[dict[str, Any]],
    policy,
    *,
    arms: list[str],
    config: dict[str, Any] | None = None,
    seed: int = 0,
    trials_per_task: int = 1,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Apply a ``GatePolicy`` to one run's trial rows; returns the verdict with its numbers.

    ``config`` is the run's stored resolved config (suite settings, tasks with their
    ``must_never`` flags); the primary arms come from the policy, else the suite's primary
    comparison, else the first two arms. Pure: no store access.
    """
    from harness.release.adaptive import design_summary
    from harness.release.compare import paired_comparison
    from harness.release.slices import class_screens

    config = config or {}
    suite = config.get("suite") or {}
    baseline, candidate = _arms(policy, suite, arms)
    report = suite.get("report") or {}
    cluster_key = report.get("cluster_key", "cluster")
    denominator = suite.get("denominator", "failure")
    by_arm: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_arm[r["arm"]].append(r)
    rows_a, rows_b = by_arm.get(baseline, []), by_arm.get(candidate, [])

    flagged = {t for t, d in (config.get("tasks") or {}).items() if d.get("must_never")}
    must_never = _must_never(rows_b, list(policy.must_never), flagged)
    coverage = _coverage({baseline: rows_a, candidate: rows_b}, policy.max_unresolved)
    level = interval_level(policy)
    kw = dict(
        confidence=level,
        cluster_key=cluster_key,
        seed=seed,
        n_resamples=policy.n_resamples,
        denominator=denominator,
    )
    primary = paired_comparison(rows_a, rows_b, **kw)
    stat_verdict, why = primary_verdict(primary, policy)
    first_phase = None
    if (suite.get("repeats") or {}).get("mode") == "adaptive":
        # Repeats follow discordance, so per-task rates over all trials shrink the repeated
        # tasks' differences while unrepeated tasks keep one trial: never read them alone.
        # The first phase (every task, the same trials per arm) is unbiased; both must agree.
        first = [r for r in rows_a + rows_b if r["trial_index"] < trials_per_task]
        fa = [r for r in first if r["arm"] == baseline]
        fb = [r for r in first if r["arm"] == candidate]
        first_phase = paired_comparison(fa, fb, **kw)
        v1, why1 = primary_verdict(first_phase, policy)
        first_phase.update(verdict=v1, why=why1)
        first_phase.pop("tasks", None)
        if v1 != stat_verdict:
            why = (
                f"all trials say {stat_verdict} ({why}) but the first phase says {v1} "
                f"({why1}); an adaptive design needs both to agree"
            )
            stat_verdict = "inconclusive"
        else:
            why = f"{why}; the first phase agrees ({why1})"

    aa_name = f"{baseline}-aa"
    noise = None
    if aa_name in by_arm:
        c = paired_comparison(rows_a, by_arm[aa_name], **kw)
        if c["estimate"] is not None:
            noise = {
                "arm": aa_name,
                "estimate": c["estimate"],
                "lo": c["lo"],
                "hi": c["hi"],
                "half_width": (c["hi"] - c["lo"]) / 2,
                "table": c["table"],
                "signs": c["signs"],
                "p_value": c["p_value"],
                "excludes_zero": c["lo"] > 0 or c["hi"] < 0,
            }

    violated = [c for c in must_never if c["status"] == "violated"]
    unverified = [c for c in must_never if c["status"] == "unverified"]
    reasons: list[str] = []
    if violated:
        verdict = "no-verdict"
        reasons += [f"{c['name']} violated: {c['message']}" for c in violated]
    if unverified:
        verdict = "no-verdict"
        reasons += [f"{c['name']} unverified: {c['message']}" for c in unverified]
    if coverage["status"] == "exceeded":
        verdict = "no-verdict"
        reasons.append(
            f"unresolved share {coverage['worst_share']:.1%} exceeds max_unresolved "
            f"{policy.max_unresolved:.1%}: repair the infrastructure or graders and re-run"
        )
    if not reasons:
        verdict = stat_verdict
        reasons.append(why)
    headline_flat = stat_verdict not in ("improvement", "regression")
    screens = class_screens(
        rows_a,
        rows_b,
        alpha=1 - policy.confidence,
        cluster_key=cluster_key,
        denominator=denominator,
        seed=seed,
        headline_flat=headline_flat,
    )
    counts = {arm: _trials_per_task(rs) for arm, rs in ((baseline, rows_a), (candidate, rows_b))}
    design = design_summary(suite.get("repeats"), trials_per_task, counts)
    warnings: list[str] = []
    if noise and noise["excludes_zero"]:
        warnings.append(
            f"the A/A arm moved ({noise['estimate']:+.3f}, interval excludes 0): the run is "
            "noisier than its intervals assume (drift, leaking state, or a nondeterministic grader)"
        )
    if primary.get("n_clusters") and primary["n_clusters"] < 20:
        warnings.append(
            f"only {primary['n_clusters']} independent clusters: bootstrap intervals are too "
            "narrow with few clusters (seed 004)"
        )
    if primary["dropped"]["n"]:
        warnings.append(f"{primary['dropped']['n']} task(s) not in both arms were left unpaired")
    return {
        "run_id": run_id,
        "verdict": verdict,
        "may_ship": verdict in MAY_SHIP,
        "blocked_by_must_never": bool(violated),
        "exit_code": exit_code(verdict, bool(violated)),
        "reasons": reasons,
        "policy": policy.model_dump(mode="json"),
        "baseline": baseline,
        "candidate": candidate,
        "must_never": must_never,
        "coverage": coverage,
        "primary": {**primary, "verdict": stat_verdict, "why": why, "interval_level": level},
        "first_phase": first_phase,
        "noise_floor": noise,
        "screens": screens,
        "design": design,
        "warnings": warnings,
        "cannot_establish": _limits(policy, stat_verdict),
    }


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


def _arms(policy, suite: dict[str, Any], arms: list[str]) -> tuple[str, str]:
    from harness.errors import ConfigError

    if policy.primary is not None:
        pair = (policy.primary.baseline, policy.primary.candidate)
    else:
        found = None
        for primary in (
            (suite.get("gate") or {}).get("primary"),
            (suite.get("report") or {}).get("primary"),
        ):
            if primary:
                found = (primary["baseline"], primary["candidate"])
                break
        if found is None:
            names = [a for a in arms if not (suite.get("aa") and a.endswith("-aa"))]
            if len(names) < 2:
                raise ConfigError("gate", "primary", "the run has fewer than two arms to compare")
            found = (names[0], names[1])
        pair = found
    for arm in pair:
        if arm not in arms:
            raise ConfigError("gate", "primary", f"the run has no arm '{arm}' ({', '.join(arms)})")
    return pair


def _trials_per_task(rows: list[dict[str, Any]]) -> list[int]:
    """Trials of the task as written (no variants) per task, in sorted task order."""
    per_task = Counter(r["task_id"] for r in rows if (r.get("variant") or "") == "")
    return [per_task[t] for t in sorted({r["task_id"] for r in rows})]
