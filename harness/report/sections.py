"""The report's sections for one arm, as pure functions over arrays (``load.ArmTrials``).

Per-task aggregation comes first everywhere: a task's trials are counted per task, and only
then is an estimate or interval formed over tasks (or clusters of tasks), so repeated trials
never shrink an interval as if they were new tasks (seeds 002, 003, 004).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.report.load import FAILED_CODE, PASSED_CODE, ArmTrials, VariantPairs
from harness.stats import (
    cluster_bootstrap_ci,
    cluster_resample_counts,
    effective_clusters,
    expected_calibration_error,
    harm_rate,
    kish_effective_n,
    mean_ci_clustered,
    pass_at_k,
    pass_hat_k,
    predict_pass_hat_k,
    robustness_drop,
    stratified_estimate,
    wilson_interval,
)
from harness.stats._util import z_two_sided

MIN_CLUSTERS = 5
"""Below this many clusters a cluster-robust interval is not trusted (seeds 003, 004)."""
BOOTSTRAP_MIN_UNITS = 30
"""Below this many independent units percentile bootstrap intervals run too narrow (seed
004), so pass^k and pass@k use the success rate's analytic interval instead."""
LATENCY_WARN_TRIALS = 100
ECE_BINS = 10


def num(x: Any) -> float | None:
    """A JSON-safe float: None for None, NaN and infinities."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def clip01(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


# ----------------------------------------------------------------------------- sampling unit
@dataclass(frozen=True)
class Unit:
    """The independent unit intervals resample or cluster on, for one arm's included tasks."""

    kind: str
    """'cluster' or 'task'."""
    labels: np.ndarray | None
    """Cluster label per included task when kind == 'cluster', else None."""
    n_units: int
    reason: str
    warning: str | None = None


def choose_unit(clusters: np.ndarray, cluster_key: str) -> Unit:
    """Clusters when the suite clusters tasks and there are enough clusters; else tasks."""
    n_tasks = int(clusters.size)
    n_clusters = len(set(clusters.tolist()))
    if cluster_key == "task":
        return Unit("task", None, n_tasks, "the suite's report.cluster_key is 'task'")
    if n_clusters == n_tasks:
        return Unit("task", None, n_tasks, "every task is its own cluster")
    if n_clusters < MIN_CLUSTERS:
        return Unit(
            "task",
            None,
            n_tasks,
            f"only {n_clusters} cluster(s), fewer than {MIN_CLUSTERS}",
            warning=(
                f"only {n_clusters} cluster(s): too few for a cluster-robust interval, so "
                "intervals treat tasks as independent. They describe these clusters' tasks "
                "and are too narrow for a claim about clusters beyond them."
            ),
        )
    return Unit("cluster", clusters, n_clusters, f"{n_clusters} clusters")


def _wilson_rate(mean: float, n: int, confidence: float) -> tuple[float, float]:
    lo, hi = wilson_interval(clip01(mean) * n, n, confidence)
    return float(lo), float(hi)


def mean_interval(
    values: np.ndarray,
    unit: Unit,
    confidence: float,
    *,
    weights: np.ndarray | None = None,
    bounded: bool = True,
) -> dict[str, Any]:
    """Estimate and interval for the (weighted) mean of per-task values in [0, 1].

    Clustered unit: cluster-robust SE (CR1) with a Student t on C − 1 degrees of freedom
    (``mean_ci_clustered``). Task unit, or a clustered SE of zero: the Wilson interval over
    tasks with the mean times n as the success count (conservative for per-task rates, whose
    variance is at most p(1 − p)); with weights, a t interval over tasks.
    """
    n = int(values.size)
    out: dict[str, Any] = {"n": n, "unit": "task", "confidence": confidence}
    if n == 0:
        return {**out, "estimate": None, "lo": None, "hi": None, "method": "no tasks"}
    if unit.kind == "cluster":
        mi = mean_ci_clustered(values, unit.labels, confidence, weights=weights)
        if mi.se > 0:
            lo, hi = (clip01(mi.lo), clip01(mi.hi)) if bounded else (mi.lo, mi.hi)
            return {
                **out,
                "estimate": mi.estimate,
                "lo": lo,
                "hi": hi,
                "se": mi.se,
                "n_clusters": mi.n_clusters,
                "method": (
                    f"cluster-robust (CR1) standard error over {mi.n_clusters} clusters, "
                    f"Student t with {mi.n_clusters - 1} df"
                ),
            }
    if weights is not None and n >= 2:
        mi = mean_ci_clustered(values, None, confidence, weights=weights)
        lo, hi = (clip01(mi.lo), clip01(mi.hi)) if bounded else (mi.lo, mi.hi)
        return {
            **out,
            "estimate": mi.estimate,
            "lo": lo,
            "hi": hi,
            "se": mi.se,
            "method": f"weighted mean, t interval over {n} tasks (each task independent)",
        }
    mean = float(np.average(values, weights=weights))
    lo, hi = _wilson_rate(mean, n, confidence)
    why = " (the clustered SE is zero)" if unit.kind == "cluster" else ""
    return {
        **out,
        "estimate": mean,
        "lo": lo,
        "hi": hi,
        "method": f"Wilson score interval over {n} tasks, mean of per-task rates{why}",
    }


# ----------------------------------------------------------------------------- bootstrap
def _group_codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    _, codes = np.unique(labels.astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    return codes, int(codes.max()) + 1 if codes.size else 0


def bootstrap_means(
    values: np.ndarray,
    valid: np.ndarray,
    unit: Unit,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence: float,
    value_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals for several per-task means at once.

    ``values`` and ``valid`` have shape (n_tasks, K); column j's statistic is the mean of
    values[:, j] over tasks where valid[:, j]. Clustered unit: resample whole clusters
    (``cluster_resample_counts``). Task unit: resample tasks; when ``value_groups`` labels
    tasks whose rows are identical (e.g. the same (n, c) pair), draw the resample as
    multinomial counts over those groups, which has the same distribution as resampling
    tasks and costs one column per distinct row instead of one per task.
    Returns (lo, hi), each of shape (K,).
    """
    vals = np.where(valid, values, 0.0)
    weights = valid.astype(float)
    if unit.kind == "cluster":
        codes, g = _group_codes(unit.labels)
        batches = cluster_resample_counts(g, n_resamples, rng)
    else:
        codes = np.arange(values.shape[0]) if value_groups is None else value_groups
        g = int(codes.max()) + 1
        freq = np.bincount(codes, minlength=g).astype(float)
        n_tasks = int(freq.sum())
        if value_groups is None:
            batches = cluster_resample_counts(g, n_resamples, rng)
        else:
            batches = _multinomial_batches(n_tasks, freq / n_tasks, n_resamples, rng)
    k = values.shape[1]
    stacked = _group_sums(codes, g, np.hstack([vals, weights]))
    reps = np.empty((n_resamples, k))
    row = 0
    for counts in batches:
        sums = counts.astype(float) @ stacked
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[row : row + counts.shape[0]] = sums[:, :k] / sums[:, k:]
        row += counts.shape[0]
    return _quantiles(reps, confidence)


def _quantiles(reps: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval ends along axis 0, ignoring undefined (NaN) replicates."""
    tail = (1.0 - confidence) / 2.0
    q = np.nanquantile if np.isnan(reps).any() else np.quantile
    with np.errstate(all="ignore"):
        lo, hi = q(reps, [tail, 1.0 - tail], axis=0)
    return lo, hi


def _group_sums(codes: np.ndarray, g: int, values: np.ndarray) -> np.ndarray:
    """Σ of the rows of ``values`` per group code 0..g-1, shape (g, columns): sort by code,
    then ``np.add.reduceat`` (much faster than ``np.add.at`` for many columns)."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    out = np.zeros((g, values.shape[1]))
    out[sorted_codes[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out


def _multinomial_batches(n: int, probs: np.ndarray, n_resamples: int, rng: np.random.Generator):
    rows = max(1, 2_000_000 // max(1, probs.size))
    done = 0
    while done < n_resamples:
        b = min(rows, n_resamples - done)
        yield rng.multinomial(n, probs, size=b)
        done += b


# ----------------------------------------------------------------------------- per-task counts
@dataclass(frozen=True)
class TaskOutcomes:
    """Per-task trial counts for one arm under the denominator policy."""

    n: np.ndarray
    """Trials counted per task (all completed under 'failure', resolved under 'exclude')."""
    c: np.ndarray
    """Passed trials per task."""
    completed: np.ndarray
    resolved: np.ndarray
    include: np.ndarray
    """Tasks with n > 0: the tasks every estimate is over."""


def task_outcomes(arm: ArmTrials, denominator: str) -> TaskOutcomes:
    t = arm.tasks.size
    ti = arm.task_index
    resolved_trial = (arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)
    completed = np.bincount(ti, minlength=t)
    resolved = np.bincount(ti[resolved_trial], minlength=t)
    c = np.bincount(ti[arm.status == PASSED_CODE], minlength=t)
    n = completed if denominator == "failure" else resolved
    return TaskOutcomes(n=n, c=c, completed=completed, resolved=resolved, include=n > 0)


# ----------------------------------------------------------------------------- pass^k, pass@k
def pass_k_section(
    n: np.ndarray,
    c: np.ndarray,
    unit: Unit,
    ks: list[int],
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence: float,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Mean unbiased per-task pass^k and pass@k for each k, with cluster-bootstrap intervals.

    Only tasks with at least k counted trials enter k's estimate (the estimators need n >= k).
    Identical (n, c) pairs are evaluated once.
    """
    ks = [k for k in ks if n.size and k <= int(n.max())]
    if not ks:
        return [], []
    pairs, pair_idx = np.unique(np.column_stack([n, c]), axis=0, return_inverse=True)
    pair_idx = pair_idx.reshape(-1)
    pn, pc = pairs[:, 0], pairs[:, 1]
    k_arr = np.asarray(ks)
    ok = pn[:, None] >= k_arr[None, :]
    safe_k = np.where(ok, k_arr[None, :], 0)
    nn = np.broadcast_to(pn[:, None], ok.shape)
    cc = np.broadcast_to(pc[:, None], ok.shape)
    hat = np.where(ok, pass_hat_k(nn, cc, safe_k), 0.0)
    at = np.where(ok, pass_at_k(nn, cc, safe_k), 0.0)
    values = np.hstack([hat, at])[pair_idx]
    valid = np.hstack([ok, ok])[pair_idx]
    counts = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(valid, values, 0.0).sum(axis=0) / counts
    records: list[dict[str, Any]] = []
    if unit.n_units >= BOOTSTRAP_MIN_UNITS:
        lo, hi = bootstrap_means(
            values,
            valid,
            unit,
            n_resamples=n_resamples,
            rng=rng,
            confidence=confidence,
            value_groups=pair_idx,
        )
        method = (
            f"mean of unbiased per-task estimates; percentile {_boot_name(unit)} bootstrap, "
            f"{n_resamples} resamples"
        )
        for col in range(values.shape[1]):
            records.append({"lo": num(lo[col]), "hi": num(hi[col]), "method": method})
    else:  # too few units for a percentile bootstrap: the success rate's analytic interval
        for col in range(values.shape[1]):
            m = valid[:, col]
            sub = unit
            if unit.kind == "cluster":
                sub = Unit("cluster", unit.labels[m], unit.n_units, unit.reason)
            mi = mean_interval(values[m, col], sub, confidence)
            records.append(
                {
                    "lo": mi["lo"],
                    "hi": mi["hi"],
                    "method": f"mean of unbiased per-task estimates; {mi['method']}",
                }
            )
    out_hat, out_at = [], []
    for j, k in enumerate(ks):
        for out, col in ((out_hat, j), (out_at, len(ks) + j)):
            out.append(
                {
                    "k": int(k),
                    "estimate": num(est[col]),
                    "n": int(counts[col]),
                    "unit": "task",
                    "confidence": confidence,
                    **records[col],
                }
            )
    return out_hat, out_at


def _boot_name(unit: Unit) -> str:
    return f"cluster ({unit.n_units} clusters)" if unit.kind == "cluster" else "task"


def prediction_section(
    n: np.ndarray,
    c: np.ndarray,
    unit: Unit,
    trials: int,
    observed_hat: list[dict[str, Any]],
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, Any]:
    """Beta-binomial predicted pass^k beyond the trials run (seed 003), marked a prediction."""
    ks = sorted({k for k in (2 * trials, 4 * trials, 8, 16, 32) if k > trials})
    base: dict[str, Any] = {
        "prediction": True,
        "estimand": "mean over tasks of p_j^k with task rates p_j ~ Beta(a, b) fitted to the "
        "per-task counts; a model-based prediction, not an observation",
        "ks": ks,
    }
    if n.size < 2 or not ks:
        return {**base, "points": [], "note": "needs at least two tasks"}
    # The moment fit (unbiased pass^1 and pass^2) is closed-form, so hundreds of bootstrap
    # refits cost nothing; it needs two trials per task, else maximum likelihood.
    method = "moments" if int(n.min()) >= 2 else "mle"
    try:
        pred = predict_pass_hat_k(
            c,
            n,
            ks + [trials],
            n_boot=n_resamples,
            rng=seed,
            method=method,
            confidence=confidence,
            clusters=unit.labels if unit.kind == "cluster" else None,
        )
    except ValueError as exc:  # every task passed or every task failed: no spread to fit
        return {**base, "points": [], "note": f"not fitted: {exc}"}
    points = [
        {
            "k": int(k),
            "estimate": num(pred.estimate[i]),
            "lo": num(pred.lo[i]),
            "hi": num(pred.hi[i]),
            "n": int(n.size),
            "unit": "task",
            "confidence": confidence,
        }
        for i, k in enumerate(ks)
    ]
    observed = next((p for p in observed_hat if p["k"] == trials), None)
    return {
        **base,
        "points": points,
        "a": num(pred.a),
        "b": num(pred.b),
        "n_tasks": int(n.size),
        "method": (
            "beta-binomial fit by "
            + ("moments (unbiased pass^1, pass^2)" if method == "moments" else "maximum likelihood")
            + f"; percentile {_boot_name(unit)} bootstrap with refits, {n_resamples} resamples"
        ),
        "check": {
            "k": trials,
            "fitted": num(pred.estimate[-1]),
            "observed_unbiased": observed["estimate"] if observed else None,
        },
    }


# ----------------------------------------------------------------------------- slices
def slices_section(
    labels: np.ndarray,
    rates: np.ndarray,
    n_trials: np.ndarray,
    confidence: float,
) -> list[dict[str, Any]]:
    """One entry per label value: tasks, trials, mean per-task rate, Wilson interval over tasks."""
    if labels.size == 0:
        return []
    names, codes = np.unique(labels.astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    tasks = np.bincount(codes, minlength=names.size)
    sums = np.bincount(codes, weights=rates, minlength=names.size)
    trials = np.bincount(codes, weights=n_trials, minlength=names.size)
    means = sums / tasks
    lo, hi = wilson_interval(np.clip(means, 0, 1) * tasks, tasks.astype(float), confidence)
    return [
        {
            "name": str(names[i]),
            "tasks": int(tasks[i]),
            "trials": int(trials[i]),
            "estimate": float(means[i]),
            "lo": float(lo[i]),
            "hi": float(hi[i]),
            "n": int(tasks[i]),
            "unit": "task",
            "confidence": confidence,
            "method": "Wilson score interval over the slice's tasks",
        }
        for i in range(names.size)
    ]


# ----------------------------------------------------------------------------- stratified
def stratified_section(
    rates: np.ndarray,
    strata: np.ndarray,
    weights: np.ndarray,
    unit: Unit,
    confidence: float,
) -> dict[str, Any] | None:
    """Reweighted estimate with Kish n_eff when strata or non-unit weights are declared.

    With strata: Σ_h w_h p̂_h with w_h the stratum's share of the task weights and the seed
    002 standard error. With weights only: the weighted mean of per-task rates with a
    cluster-aware interval.
    """
    declared = np.array([s is not None for s in strata.tolist()], dtype=bool)
    if rates.size == 0 or (not declared.any() and np.all(weights == 1.0)):
        return None
    n_eff = kish_effective_n(weights)
    base = {
        "estimand": "success rate over the population the task weights describe",
        "n": int(rates.size),
        "n_eff": n_eff,
        "unit": "task",
        "confidence": confidence,
    }
    if declared.any():
        labels = np.array([s if s is not None else "(none)" for s in strata.tolist()], dtype=str)
        names, codes = np.unique(labels, return_inverse=True)
        codes = codes.reshape(-1)
        n_h = np.bincount(codes, minlength=names.size).astype(float)
        p_h = np.bincount(codes, weights=rates, minlength=names.size) / n_h
        w_h = np.bincount(codes, weights=weights, minlength=names.size)
        share = w_h / w_h.sum()
        est, se = stratified_estimate(p_h, n_h, share)
        z = z_two_sided(confidence)
        return {
            **base,
            "estimate": est,
            "se": se,
            "lo": clip01(est - z * se),
            "hi": clip01(est + z * se),
            "method": (
                "stratified estimate Σ_h w_h p̂_h, SE sqrt(Σ_h w_h² p̂_h(1 − p̂_h)/n_h), normal "
                "interval; w_h = the stratum's share of task weight"
            ),
            "strata": [
                {
                    "name": str(names[i]),
                    "tasks": int(n_h[i]),
                    "weight_share": float(share[i]),
                    "estimate": float(p_h[i]),
                }
                for i in range(names.size)
            ],
        }
    mi = mean_interval(rates, unit, confidence, weights=weights)
    return {**base, **{k: v for k, v in mi.items() if k not in ("n", "unit")}}


# ----------------------------------------------------------------------------- reliability
def robustness_section(
    pairs: VariantPairs | None,
    cluster_of: dict[str, Any],
    unit: Unit,
    denominator: str,
    confidence: float,
) -> dict[str, Any] | None:
    """Paired change in success between variant trials and the original trial of the same
    (task, trial index), hence the same seed; negative = a drop (seed 000)."""
    if pairs is None or pairs.task.size == 0:
        return None
    resolved = np.isin(pairs.status, (PASSED_CODE, FAILED_CODE)) & np.isin(
        pairs.original_status, (PASSED_CODE, FAILED_CODE)
    )
    keep = resolved if denominator == "exclude" else np.ones(pairs.task.size, dtype=bool)
    pert = (pairs.status[keep] == PASSED_CODE).astype(float)
    orig = (pairs.original_status[keep] == PASSED_CODE).astype(float)
    tasks = pairs.task[keep]
    out: dict[str, Any] = {
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
    return {
        **out,
        "estimate": d.estimate,
        "lo": d.ci[0],
        "hi": d.ci[1],
        "se": num(d.se),
        "p_value": num(d.p_value),
        "original_rate": float(orig.mean()),
        "variant_rate": float(pert.mean()),
        "n": int(pert.size),
        "method": f"paired difference, clustered SE over {what}, normal interval",
    }


def calibration_section(
    arm: ArmTrials,
    unit: Unit,
    include: np.ndarray,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence: float,
) -> dict[str, Any] | None:
    """Expected calibration error of stated confidences over resolved trials (seed 000)."""
    resolved = (arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)
    has = resolved & ~np.isnan(arm.confidence) & include[arm.task_index]
    if not has.any():
        return None
    conf = np.clip(arm.confidence[has], 0.0, 1.0)
    y = (arm.status[has] == PASSED_CODE).astype(float)
    ece = expected_calibration_error(conf, y, ECE_BINS)
    # Bootstrap: per-group bin sums (count, Σ confidence, Σ outcome), resampled by unit.
    task = arm.task_index[has]
    if unit.kind == "cluster":  # group codes per task first, then per trial by position
        task_codes = np.zeros(arm.tasks.size, dtype=np.intp)
        task_codes[include], g = _group_codes(unit.labels)
        codes = task_codes[task]
    else:
        _, codes = np.unique(task, return_inverse=True)
        codes = codes.reshape(-1)
        g = int(codes.max()) + 1
    b = np.minimum((conf * ECE_BINS).astype(int), ECE_BINS - 1)
    cell = codes * ECE_BINS + b
    size = g * ECE_BINS
    sums = np.hstack(
        [
            np.bincount(cell, minlength=size).reshape(g, ECE_BINS),
            np.bincount(cell, weights=conf, minlength=size).reshape(g, ECE_BINS),
            np.bincount(cell, weights=y, minlength=size).reshape(g, ECE_BINS),
        ]
    ).astype(float)
    reps = np.empty(n_resamples)
    row = 0
    for counts in cluster_resample_counts(g, n_resamples, rng):
        s = counts.astype(float) @ sums
        cnt, sc, sy = s[:, :ECE_BINS], s[:, ECE_BINS : 2 * ECE_BINS], s[:, 2 * ECE_BINS :]
        total = cnt.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[row : row + counts.shape[0]] = np.abs(sc - sy).sum(axis=1) / total
        row += counts.shape[0]
    lo, hi = _quantiles(reps, confidence)
    return {
        "estimand": "Σ_b (n_b/n)·|mean confidence_b − success rate_b| over stated confidences",
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
            f"{ECE_BINS} equal-width bins; percentile {_boot_name(unit)} bootstrap, "
            f"{n_resamples} resamples (binned ECE is biased upward at small n)"
        ),
    }


def harm_section(
    arm: ArmTrials, unit: Unit, include: np.ndarray, confidence: float
) -> dict[str, Any] | None:
    """Share of resolved trials with harm severity > 0, and mean severity (seed 000).

    Per-task shares are averaged over tasks (equal to the trial share when every task has
    the same number of trials), with the same interval method as the success rate.
    """
    resolved = ((arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)) & include[arm.task_index]
    if not resolved.any():
        return None
    sev = arm.harm[resolved]
    task = arm.task_index[resolved]
    t = arm.tasks.size
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


# ----------------------------------------------------------------------------- usage
def usage_section(
    arm: ArmTrials,
    unit: Unit,
    include: np.ndarray,
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, Any]:
    """Tokens, cost per trial and per success, latency and steps over resolved trials."""
    resolved = (arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)
    n_completed = int(arm.status.size)
    tok = arm.tokens.sum(axis=0) if arm.tokens.size else np.zeros(3)
    tokens = {
        "in": int(tok[0]),
        "cached": int(tok[1]),
        "out": int(tok[2]),
        "per_trial": {
            "in": num(tok[0] / n_completed) if n_completed else None,
            "cached": num(tok[1] / n_completed) if n_completed else None,
            "out": num(tok[2] / n_completed) if n_completed else None,
        },
        "trials": n_completed,
    }
    cost = arm.cost[resolved]
    passed = arm.status[resolved] == PASSED_CODE
    known = ~np.isnan(cost)
    n_known = int(known.sum())
    n_unknown = int(cost.size - n_known)
    cost_out: dict[str, Any] = {
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
                f"{n_unknown} of {cost.size} trials have an unknown price; figures cover the "
                f"{n_known} trials with a known cost"
            )
    elif cost.size:
        cost_out["note"] = "unknown: no trial has a known price"

    lat = arm.latency[resolved]
    steps = arm.steps[resolved]
    latency: dict[str, Any] = {"n": int(lat.size), "unit": "trial"}
    if lat.size:
        p50, p95 = np.percentile(lat, [50, 95])
        latency.update(p50_s=float(p50), p95_s=float(p95), mean_s=float(lat.mean()))
    if 0 < lat.size < LATENCY_WARN_TRIALS:
        latency["warning"] = (
            f"only {lat.size} trials (< {LATENCY_WARN_TRIALS}): percentiles, p95 above all, "
            "are unstable"
        )
    steps_out: dict[str, Any] = {"n": int(steps.size)}
    if steps.size:
        s50, s95 = np.percentile(steps, [50, 95])
        steps_out.update(mean=float(steps.mean()), p50=float(s50), p95=float(s95))
    return {"tokens": tokens, "cost": cost_out, "latency": latency, "steps": steps_out}


def _cost_ratio(
    arm: ArmTrials,
    resolved: np.ndarray,
    known: np.ndarray,
    per: str,
    unit: Unit,
    include: np.ndarray,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, Any]:
    """Σ cost / Σ trials (or successes) over known-cost trials, cluster-bootstrap interval."""
    t = arm.tasks.size
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
    out = {"estimate": est, "lo": None, "hi": None, "n": int(cost.size), "unit": "trial"}
    try:
        res = cluster_bootstrap_ci(
            np.column_stack([num_t[has], den_t[has]]),
            clusters,
            "ratio",
            confidence=confidence,
            n_resamples=resamples,
            rng=seed,
        )
        out.update(
            lo=res.ci[0],
            hi=res.ci[1],
            method=f"ratio of sums; percentile {_boot_name(unit)} bootstrap, {resamples} resamples",
        )
    except ValueError:  # a resample with no successes: no interval
        out["method"] = "ratio of sums; no bootstrap interval (some resamples have no successes)"
    return out


# ----------------------------------------------------------------------------- infra
def infra_section(
    by_status: dict[str, int], attempts: dict[str, int], confidence: float
) -> dict[str, Any]:
    """Crash accounting: unresolved trials by kind and the per-attempt crash rate."""
    total = int(sum(attempts.values()))
    crashed = int(attempts.get("infra_error", 0))
    out: dict[str, Any] = {
        "infra_error_trials": int(by_status.get("infra_error", 0)),
        "grader_error_trials": int(by_status.get("grader_error", 0)),
        "harness_error_trials": int(by_status.get("harness_error", 0)),
        "attempts": total,
        "attempts_by_outcome": dict(sorted(attempts.items())),
        "infra_error_attempts": crashed,
    }
    if total:
        lo, hi = wilson_interval(crashed, total, confidence)
        out["crash_rate"] = {
            "estimate": crashed / total,
            "lo": float(lo),
            "hi": float(hi),
            "n": total,
            "unit": "attempt",
            "confidence": confidence,
            "method": "Wilson score interval over attempts (attempts of one trial may be "
            "correlated)",
        }
    else:
        out["crash_rate"] = None
    return out


def unresolved_by_class(
    classes: np.ndarray,
    resolved: np.ndarray,
    confidence: float,
) -> list[dict[str, Any]]:
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
    """Effective number of clusters J²/Σ J_r² (seed 003) for per-task cluster labels."""
    return effective_clusters(clusters.astype(str)) if clusters.size else 0.0
