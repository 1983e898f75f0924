"""Paired comparison of two arms on the same tasks: the number a release decision reads.

Seed 004: estimate each arm's per-task success rate from its scheduled trials, subtract
baseline from candidate per task, aggregate those differences with the declared task weights,
and resample the independent unit (cluster) carrying both arms' records together. Seed 001:
only the discordant tasks carry information about which arm is better, so the test is the
exact McNemar test (single-trial designs) or the sign test on per-task differences.

Everything here is pure: rows in (plain dicts, as read from the store), a JSON-able dict out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

RESOLVED = ("passed", "failed")

METHOD = "paired cluster bootstrap (percentile) of per-task rate differences"
TEST_MCNEMAR = "exact McNemar on discordant tasks"
TEST_SIGN = "sign test on per-task differences"
PAIRING_TRIAL = "per-trial (shared seed blocks)"
PAIRING_TASK = "per-task"


def outcome(row: dict[str, Any], denominator: str = "failure") -> float | None:
    """A trial's 0/1 outcome, or None when the row leaves the denominator.

    ``denominator="failure"`` (the default, seed 004's conservative reading) counts an
    unresolved trial (infra/grader/harness error) as a failure; ``"exclude"`` drops it.
    """
    status = row.get("status")
    if status == "passed":
        return 1.0
    if status == "failed":
        return 0.0
    if denominator == "exclude":
        return None
    if denominator != "failure":
        raise ValueError("denominator must be 'failure' or 'exclude'")
    return 0.0


def _by_task(
    rows: Iterable[dict[str, Any]], denominator: str, cluster_key: str, variants: bool
) -> dict[str, dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = {}
    for r in rows:
        if not variants and (r.get("variant") or "") != "":
            continue
        tid = r["task_id"]
        t = tasks.setdefault(
            tid,
            {
                "successes": 0.0,
                "trials": 0,
                "scheduled": 0,
                "unresolved": 0,
                "blocks": set(),
                "cluster": tid if cluster_key == "task" else (r.get(cluster_key) or tid),
                "task_class": r.get("task_class") or "default",
                "weight": float(r.get("weight") if r.get("weight") is not None else 1.0),
            },
        )
        t["scheduled"] += 1
        if r.get("status") not in RESOLVED:
            t["unresolved"] += 1
        t["blocks"].add((r.get("trial_index"), r.get("variant") or "", r.get("seed")))
        y = outcome(r, denominator)
        if y is None:
            continue
        t["successes"] += y
        t["trials"] += 1
    return tasks


def _p_values(broke: int, fixed: int) -> dict[str, float]:
    from harness.stats import mcnemar_exact

    return {
        alt: float(mcnemar_exact(broke, fixed, alt)) for alt in ("two-sided", "greater", "less")
    }


def paired_comparison(
    rows_a: list[dict],
    rows_b: list[dict],
    *,
    confidence: float = 0.95,
    cluster_key: str = "cluster",
    seed: int = 0,
    n_resamples: int = 10_000,
    denominator: str = "failure",
    weights: bool = True,
    variants: bool = False,
) -> dict[str, Any]:
    """Paired comparison of candidate (B) against baseline (A) on the tasks both ran.

    Estimand: Σ_j w_j (p̂_Bj − p̂_Aj) / Σ_j w_j, the weighted mean over paired tasks of the
    per-task success-rate difference (candidate − baseline; positive means the candidate is
    better). Interval: two-sided paired cluster bootstrap percentile interval at
    ``confidence`` (a one-sided bound at level 1 − α is the lower or upper end of the
    two-sided interval at 1 − 2α). Test: exact McNemar on discordant tasks when every paired
    task has exactly one trial per arm, else the exact sign test on per-task differences;
    ``p_value`` is two-sided, ``p_values`` holds the one-sided tails too ("greater": the
    candidate is better).

    Args:
        rows_a, rows_b: trial-row dicts of the baseline and the candidate (keys arm, task_id,
            cluster, task_class, weight, status, passed, trial_index, seed, variant).
        cluster_key: ``"cluster"`` resamples the rows' clusters; ``"task"`` each task alone.
        seed: bootstrap seed (the same seed gives the same interval).
        denominator: ``"failure"`` counts unresolved trials as failures; ``"exclude"`` drops
            them (a task with no resolved trial in either arm is then unpaired).
        weights: aggregate with the rows' task weights (else every task counts equally).
        variants: include meaning-preserving variant trials as further trials of their task
            (default: only the task as written).

    Only tasks present in both arms are paired; the others are counted in ``dropped``.
    Assumes clusters are independent; with few clusters bootstrap intervals are too narrow.
    """
    import numpy as np

    from harness.stats import paired_cluster_bootstrap, sign_test

    ta = _by_task(rows_a, denominator, cluster_key, variants)
    tb = _by_task(rows_b, denominator, cluster_key, variants)
    paired = sorted(t for t in ta if t in tb and ta[t]["trials"] > 0 and tb[t]["trials"] > 0)
    only_a = sorted(t for t in ta if t not in tb)
    only_b = sorted(t for t in tb if t not in ta)
    no_verdict = sorted(t for t in ta if t in tb and t not in set(paired))
    dropped = {
        "n": len(only_a) + len(only_b) + len(no_verdict),
        "baseline_only": only_a[:20],
        "candidate_only": only_b[:20],
        "no_resolved_trial": no_verdict[:20],
    }
    out: dict[str, Any] = {
        "confidence": confidence,
        "method": METHOD,
        "resampling_unit": "task" if cluster_key == "task" else "cluster",
        "denominator": denominator,
        "weights": "declared task weights" if weights else "equal",
        "n_tasks": len(paired),
        "dropped": dropped,
        "n_trials": {
            "baseline": int(sum(ta[t]["scheduled"] for t in paired)),
            "candidate": int(sum(tb[t]["scheduled"] for t in paired)),
        },
        "unresolved": {
            "baseline": int(sum(ta[t]["unresolved"] for t in paired)),
            "candidate": int(sum(tb[t]["unresolved"] for t in paired)),
        },
    }
    if not paired:
        out.update(
            estimate=None,
            lo=None,
            hi=None,
            n_clusters=0,
            table={"both_pass": 0, "fixed": 0, "broke": 0, "both_fail": 0},
            signs={"improved": 0, "worse": 0, "tied": 0},
            p_value=None,
            p_values={},
            test=None,
            pairing=None,
            design="no paired tasks",
            baseline=None,
            candidate=None,
            tasks=[],
        )
        return out

    ra = np.array([ta[t]["successes"] / ta[t]["trials"] for t in paired])
    rb = np.array([tb[t]["successes"] / tb[t]["trials"] for t in paired])
    clusters = [ta[t]["cluster"] for t in paired]
    w = np.array([ta[t]["weight"] for t in paired]) if weights else None
    boot = paired_cluster_bootstrap(
        ra,
        rb,
        clusters,
        weights=w,
        confidence=confidence,
        n_resamples=n_resamples,
        rng=seed,
    )
    d = rb - ra
    single = all(ta[t]["trials"] == 1 and tb[t]["trials"] == 1 for t in paired)
    pass_a, pass_b = ra >= 0.5, rb >= 0.5
    table = {
        "both_pass": int(np.count_nonzero(pass_a & pass_b)),
        "fixed": int(np.count_nonzero(~pass_a & pass_b)),
        "broke": int(np.count_nonzero(pass_a & ~pass_b)),
        "both_fail": int(np.count_nonzero(~pass_a & ~pass_b)),
    }
    signs = {
        "improved": int(np.count_nonzero(d > 0)),
        "worse": int(np.count_nonzero(d < 0)),
        "tied": int(np.count_nonzero(d == 0)),
    }
    if single:
        p_values = _p_values(table["broke"], table["fixed"])
        test = TEST_MCNEMAR
    else:
        p_values = {alt: float(sign_test(d, alt)) for alt in ("two-sided", "greater", "less")}
        test = TEST_SIGN
    # Trial-level pairing needs a real shared unit: every (trial index, variant, seed) block
    # of a task in one arm appears in the other (seed 004).
    shared = all(
        ta[t]["blocks"] == tb[t]["blocks"] and all(b[2] is not None for b in ta[t]["blocks"])
        for t in paired
    )
    trials = sorted({(ta[t]["trials"], tb[t]["trials"]) for t in paired})
    if single:
        design = "1 trial per task per arm"
    elif len(trials) == 1 and trials[0][0] == trials[0][1]:
        design = f"{trials[0][0]} trials per task per arm"
    else:
        design = "unequal trials per task (e.g. adaptive repeats)"
    diff, base, cand = boot.difference, boot.baseline, boot.candidate
    out.update(
        estimate=diff.estimate,
        lo=diff.ci[0],
        hi=diff.ci[1],
        se=diff.se,
        n_clusters=diff.n_clusters,
        n_resamples=n_resamples,
        table=table,
        signs=signs,
        p_value=p_values["two-sided"],
        p_values=p_values,
        test=test,
        pairing=PAIRING_TRIAL if shared else PAIRING_TASK,
        design=design,
        baseline={"rate": base.estimate, "lo": base.ci[0], "hi": base.ci[1]},
        candidate={"rate": cand.estimate, "lo": cand.ci[0], "hi": cand.ci[1]},
        tasks=[
            {
                "task_id": t,
                "task_class": ta[t]["task_class"],
                "cluster": ta[t]["cluster"],
                "baseline": float(ra[i]),
                "candidate": float(rb[i]),
                "n_baseline": ta[t]["trials"],
                "n_candidate": tb[t]["trials"],
            }
            for i, t in enumerate(paired)
        ],
    )
    return out
