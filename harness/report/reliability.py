"""The report's reliability sections for one arm: robustness to task variants, calibration of
stated confidence, and harm. Pure functions over arrays; statistics from ``harness.stats``
(formulas in docs/statistics.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.analysis.table import FAILED_CODE, PASSED_CODE, Trials
from harness.report.records import Calibration, DiagramBin, Harm, Robustness
from harness.report.sections import boot_name, num
from harness.stats import expected_calibration_error, harm_rate, mean_estimate, robustness_drop
from harness.stats.task_bootstrap import ece_bootstrap_interval, group_codes
from harness.stats.task_units import Unit, mean_interval

ECE_BINS = 10


@dataclass(frozen=True)
class VariantPairs:
    """Variant trials, each with the original trial of its (task, trial index)."""

    task: np.ndarray
    variant: np.ndarray
    status: np.ndarray
    """Status code of the variant trial."""
    original_status: np.ndarray


def variant_pairs(trials: Trials) -> VariantPairs:
    """One arm's variant trials paired with its original trial of the same task and trial
    index (hence the same seed); a variant without its original is left out."""
    var, orig = trials.variants(), trials.originals()
    width = int(trials.trial_index.max(initial=0)) + 1
    key_o = orig.task.codes.astype(np.int64) * width + orig.trial_index
    key_v = var.task.codes.astype(np.int64) * width + var.trial_index
    order = np.argsort(key_o, kind="stable")
    at = np.minimum(np.searchsorted(key_o[order], key_v), max(len(orig) - 1, 0))
    hit = key_o[order][at] == key_v if len(orig) else np.zeros(len(var), dtype=bool)
    return VariantPairs(
        task=var.task.values()[hit],
        variant=var.variant.values()[hit],
        status=var.status[hit],
        original_status=orig.status[order[at][hit]],
    )


def robustness_section(
    trials: Trials,
    cluster_of: dict[str, str | None],
    unit: Unit,
    denominator: str,
    confidence: float,
) -> Robustness | None:
    """Paired change in success between variant trials and the original trial of the same
    (task, trial index), hence the same seed; negative = a drop (metrics guide). ``trials``:
    the arm's trials, variants included."""
    pairs = variant_pairs(trials)
    if pairs.task.size == 0:
        return None
    resolved = np.isin(pairs.status, (PASSED_CODE, FAILED_CODE)) & np.isin(
        pairs.original_status, (PASSED_CODE, FAILED_CODE)
    )
    keep = resolved if denominator == "exclude" else np.ones(pairs.task.size, dtype=bool)
    pert = (pairs.status[keep] == PASSED_CODE).astype(float)
    orig = (pairs.original_status[keep] == PASSED_CODE).astype(float)
    tasks = pairs.task[keep]
    out: Robustness = {
        "estimand": "mean over (task, trial) pairs of variant success minus original success",
        "n_pairs": int(pert.size),
        "n_tasks": len(set(tasks.tolist())),
        "variants": sorted(set(pairs.variant.tolist())),
        "confidence": confidence,
    }
    if pert.size < 2:
        return {**out, "estimate": None, "lo": None, "hi": None, "note": "fewer than 2 pairs"}
    if unit.kind == "cluster":
        groups = np.array([str(cluster_of.get(t, t)) for t in tasks.tolist()])
        what = "clusters"
    else:
        groups = tasks.astype(str)
        what = "tasks"
    d = robustness_drop(orig, pert, confidence, clusters=groups)
    o_int = mean_estimate(orig, groups, kind="rate", confidence=confidence)
    v_int = mean_estimate(pert, groups, kind="rate", confidence=confidence)
    return {
        **out,
        "estimate": d.estimate,
        "lo": d.ci[0],
        "hi": d.ci[1],
        "se": num(d.se),
        "p_value": num(d.p_value),
        "original_rate": float(orig.mean()),
        "variant_rate": float(pert.mean()),
        "original_interval": [o_int.lo, o_int.hi],
        "variant_interval": [v_int.lo, v_int.hi],
        "n": int(pert.size),
        "method": f"paired difference, clustered SE over {what}, normal interval",
    }


def calibration_section(
    arm: Trials,
    unit: Unit,
    include: np.ndarray,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence: float,
) -> Calibration | None:
    """Expected calibration error of stated confidences over resolved trials (metrics guide)."""
    resolved = (arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)
    has = resolved & ~np.isnan(arm.confidence) & include[arm.task_index]
    if not has.any():
        return None
    conf = np.clip(arm.confidence[has], 0.0, 1.0)
    y = (arm.status[has] == PASSED_CODE).astype(float)
    ece = expected_calibration_error(conf, y, ECE_BINS)
    # Bootstrap: per-group bin sums (count, Σ confidence, Σ outcome), resampled by unit.
    task = arm.task_index[has]
    if unit.kind == "cluster" and unit.labels is not None:  # per task first, then per trial
        task_codes = np.zeros(arm.task_ids.size, dtype=np.intp)
        task_codes[include], g = group_codes(unit.labels)
        codes = task_codes[task]
    else:
        _, codes = np.unique(task, return_inverse=True)
        codes = codes.reshape(-1)
        g = int(codes.max()) + 1
    lo, hi = ece_bootstrap_interval(
        conf, y, codes, g, ECE_BINS, n_resamples=n_resamples, rng=rng, confidence=confidence
    )
    succ = mean_estimate(y, codes, kind="rate", confidence=confidence)
    mconf = mean_estimate(conf, codes, kind="rate", confidence=confidence)
    return {
        "estimand": "Σ_b (n_b/n)·|mean confidence_b − success rate_b| over stated confidences",
        "success_interval": [succ.lo, succ.hi],
        "mean_confidence_interval": [mconf.lo, mconf.hi],
        "diagram": reliability_diagram(conf, y, ECE_BINS),
        "ece": ece,
        "estimate": ece,
        "lo": float(lo),
        "hi": float(hi),
        "n": int(conf.size),
        "n_tasks": int(np.unique(task).size),
        "bins": ECE_BINS,
        "mean_confidence": float(conf.mean()),
        "success_rate": float(y.mean()),
        "confidence": confidence,
        "method": (
            f"{ECE_BINS} equal-width bins; percentile {boot_name(unit)} bootstrap, "
            f"{n_resamples} resamples (binned ECE is biased upward at small n)"
        ),
    }


def reliability_diagram(conf: np.ndarray, y: np.ndarray, bins: int) -> list[DiagramBin]:
    """Per non-empty equal-width bin: mean stated confidence, success rate, trials."""
    b = np.minimum((conf * bins).astype(int), bins - 1)
    cnt = np.bincount(b, minlength=bins)
    sc = np.bincount(b, weights=conf, minlength=bins)
    sy = np.bincount(b, weights=y, minlength=bins)
    return [
        {"confidence": float(sc[j] / cnt[j]), "success": float(sy[j] / cnt[j]), "n": int(cnt[j])}
        for j in range(bins)
        if cnt[j]
    ]


def harm_section(arm: Trials, unit: Unit, include: np.ndarray, confidence: float) -> Harm | None:
    """Share of resolved trials with harm severity > 0, and mean severity (metrics guide).

    Per-task shares are averaged over tasks (equal to the trial share when every task has
    the same number of trials), with the same interval method as the success rate.
    """
    resolved = ((arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)) & include[arm.task_index]
    if not resolved.any():
        return None
    sev = arm.harm[resolved]
    task = arm.task_index[resolved]
    t = arm.task_ids.size
    n_t = np.bincount(task, minlength=t)
    has = n_t > 0
    share_t = np.bincount(task, weights=(sev > 0).astype(float), minlength=t)[has] / n_t[has]
    sev_t = np.bincount(task, weights=sev, minlength=t)[has] / n_t[has]
    sub_unit = unit
    if unit.kind == "cluster":
        labels_all = np.full(t, "", dtype=object)
        labels_all[include] = unit.labels
        sub_unit = Unit("cluster", labels_all[has], unit.n_units, unit.reason)
    share = mean_interval(share_t, sub_unit, confidence)
    trial_share, trial_severity = harm_rate(sev)
    return {
        "estimand": "share of trials that caused harm (severity > 0), per-task then over tasks",
        **share,
        "harmful_trials": int(np.count_nonzero(sev > 0)),
        "trials": int(sev.size),
        "mean_severity": float(sev_t.mean()),
        "trial_share": trial_share,
        "trial_mean_severity": trial_severity,
        "max_severity": float(sev.max()),
    }
