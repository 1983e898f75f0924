"""The report's core sections for one arm, as pure functions over its trials' arrays
(``harness.analysis.table.Trials``).

Per-task aggregation comes first everywhere: a task's trials are counted per task, and only
then is an estimate or interval formed over tasks (or clusters of tasks), so repeated trials
never shrink an interval as if they were new tasks (docs/statistics.md). Reliability sections
live in ``report.reliability``, usage and infrastructure in ``report.usage``; the statistics
themselves come from ``harness.stats``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.analysis.table import FAILED_CODE, PASSED_CODE, Trials
from harness.report.records import Interval, PassAtK, Prediction, SliceRow, Stratified
from harness.stats import (
    kish_effective_n,
    mean_estimate,
    pass_at_k,
    pass_hat_k,
)
from harness.stats.mixture_fit import LOG_BOUNDS
from harness.stats.passk_predict import Extrapolation, predict_pass_k
from harness.stats.task_units import Unit, mean_interval

SPREAD_BOUND = 0.99 * float(np.exp(LOG_BOUNDS[1]))
"""a + b from which a fit shows no spread of task rates (its a, b sit at the bound)."""


def num(x: Any) -> float | None:
    """A JSON-safe float: None for None, NaN and infinities."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


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


def task_outcomes(arm: Trials, denominator: str) -> TaskOutcomes:
    t = arm.task_ids.size
    ti = arm.task_index
    resolved_trial = (arm.status == PASSED_CODE) | (arm.status == FAILED_CODE)
    completed = np.bincount(ti, minlength=t)
    resolved = np.bincount(ti[resolved_trial], minlength=t)
    c = np.bincount(ti[arm.status == PASSED_CODE], minlength=t)
    n = completed if denominator == "failure" else resolved
    return TaskOutcomes(n=n, c=c, completed=completed, resolved=resolved, include=n > 0)


def pass_k_section(
    n: np.ndarray,
    c: np.ndarray,
    unit: Unit,
    ks: list[int],
    *,
    confidence: float,
) -> tuple[list[PassAtK], list[PassAtK]]:
    """Mean unbiased per-task pass^k and pass@k for each k, with the shared interval method.

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
    records: list[Interval] = []
    # The one interval method for a mean of per-task values (harness.stats.mean_estimate):
    # CR1 + t over clusters, so few clusters never fall back to resampling tasks.
    for col in range(values.shape[1]):
        m = valid[:, col]
        sub = unit
        if unit.kind == "cluster" and unit.labels is not None:
            sub = Unit("cluster", unit.labels[m], unit.n_units, unit.reason)
        mi = mean_interval(values[m, col], sub, confidence)
        rec: Interval = {
            "lo": mi["lo"],
            "hi": mi["hi"],
            "method": f"mean of unbiased per-task estimates; {mi['method']}",
        }
        if mi.get("warning"):
            rec["warning"] = mi["warning"]
        records.append(rec)
    out_hat: list[PassAtK] = []
    out_at: list[PassAtK] = []
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


def boot_name(unit: Unit) -> str:
    """How a bootstrap's resampling unit reads in a method text."""
    return f"cluster ({unit.n_units} clusters)" if unit.kind == "cluster" else "task"


def extrapolation(
    n: np.ndarray, c: np.ndarray, unit: Unit, *, n_resamples: int, seed: int, confidence: float
) -> Extrapolation:
    """The pass^k model behind both predictions (``harness.stats.passk_predict``): chosen,
    checked and bootstrapped once; withheld with its reason when it cannot be trusted."""
    return predict_pass_k(
        c,
        n,
        [1],
        n_boot=n_resamples,
        rng=seed,
        confidence=confidence,
        clusters=unit.labels if unit.kind == "cluster" else None,
    )


def _points(
    ext: Extrapolation, ks: list[int], metric: str, n_tasks: int, *, robust: bool = False
) -> list[PassAtK]:
    """The model's prediction at each k; with ``robust`` its interval widened to hold the
    model-free bound (``harness.stats.passk_bounds``), valid whatever the task rates' shape."""
    est, lo, hi = ext.curve(ks, metric)
    if robust:
        b_lo, b_hi = ext.bounds(ks, metric)
        lo, hi = np.fmin(lo, b_lo), np.fmax(hi, b_hi)
    return [
        {
            "k": int(k),
            "estimate": num(est[i]),
            "lo": num(lo[i]),
            "hi": num(hi[i]),
            "n": n_tasks,
            "unit": "task",
            "confidence": ext.confidence,
        }
        for i, k in enumerate(ks)
    ]


def _model_text(ext: Extrapolation, unit: Unit) -> str:
    check = f"G² check p = {ext.check_p:.2f} on {ext.check_df} df"
    return (
        f"{ext.model} by maximum likelihood (an always- or never-pass share, then the other, "
        f"added when its likelihood ratio test rejects at 5%: first p = {ext.mixture_p:.3g}); "
        f"{check}; percentile "
        f"{boot_name(unit)} bootstrap of fit and choice, {ext.replicates} resamples"
    )


ROBUST_TEXT = (
    "; each interval widened to the model-free bound (the lowest and highest pass^k of any "
    "task-rate distribution whose first moments the counts allow), because no check on the "
    "counts tells a Beta from other shapes with the same moments"
)


def _withheld_note(ext: Extrapolation, ks: list[int], why: str) -> str:
    """Why no prediction, and the model-free bound at each k when the counts give one."""
    if not ks or ext.counts is None:
        return f"withheld: {why}"
    lo, hi = ext.bounds(ks, "pass_hat")
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return f"withheld: {why}"
    ranges = ", ".join(
        f"pass^{k} {100 * a:.0f}–{100 * b:.0f}%" for k, a, b in zip(ks, lo, hi, strict=True)
    )
    return f"withheld: {why}; whatever the shape of the task rates: {ranges}"


def prediction_section(
    n: np.ndarray,
    c: np.ndarray,
    trials: int,
    observed_hat: list[PassAtK],
    ext: Extrapolation,
    unit: Unit,
) -> Prediction:
    """Predicted pass^k beyond the trials run, marked a prediction, or withheld with the
    reason (agent-evaluation guide: the beta-binomial extrapolation, here checked)."""
    ks = sorted({k for k in (2 * trials, 4 * trials, 8, 16, 32) if k > trials})
    base: Prediction = {
        "prediction": True,
        "estimand": "mean over tasks of p_j^k with task rates p_j from the fitted model (a "
        "Beta, with shares of tasks that always or never pass when the counts show them); a "
        "model-based prediction, not an observation",
        "ks": ks,
        "n_tasks": int(n.size),
    }
    if ext.withheld is not None or not ks:
        why = ext.withheld or "no k beyond the trials run"
        return {**base, "points": [], "note": _withheld_note(ext, ks, why), "withheld": why}
    fitted = _points(ext, [trials], "pass_hat", int(n.size))[0]
    observed = next((p for p in observed_hat if p["k"] == trials), None)
    return {
        **base,
        "points": _points(ext, ks, "pass_hat", int(n.size), robust=True),
        "model": ext.model,
        "always_pass": num(ext.always_pass),
        "never_pass": num(ext.never_pass),
        "a": num(ext.a),
        "b": num(ext.b),
        "degenerate": (
            "no spread of task rates beyond binomial noise: the fit puts every task at one "
            "rate (a and b are a bound, not estimates)"
            if (ext.a or 0) + (ext.b or 0) >= SPREAD_BOUND
            else None
        ),
        "method": _model_text(ext, unit) + ROBUST_TEXT,
        "check": {
            "k": trials,
            "fitted": fitted["estimate"],
            "fitted_interval": [fitted["lo"], fitted["hi"]],
            "observed_unbiased": observed["estimate"] if observed else None,
            "observed_interval": [observed.get("lo"), observed.get("hi")] if observed else None,
            "n": int(n.size),
            "unit": "task",
            "p_value": num(ext.check_p),
            "df": ext.check_df,
        },
    }


def pass_at_prediction_section(
    n: np.ndarray, trials: int, ext: Extrapolation, unit: Unit
) -> Prediction | None:
    """Predicted pass@k for every k from 1 to max(2 × trials, 32) from the same model, marked
    a prediction; None when the model is withheld."""
    if ext.withheld is not None:
        return None
    ks = list(range(1, max(2 * trials, 32) + 1))
    return {
        "prediction": True,
        "estimand": "mean over tasks of 1 − (1 − p_j)^k with p_j from the fitted model; a "
        "model-based prediction, not an observation",
        "points": _points(ext, ks, "pass_at", int(n.size)),
        "method": _model_text(ext, unit) + "; the intervals rest on the model (the pass^k "
        "prediction gives the model-free bound)",
    }


def slices_section(
    labels: np.ndarray,
    rates: np.ndarray,
    n_trials: np.ndarray,
    confidence: float,
    unit_labels: np.ndarray | None = None,
) -> list[SliceRow]:
    """One entry per label value: tasks, trials, mean per-task rate and its interval.

    The interval is the shared method (``mean_interval``) over the slice's own independent
    units: its clusters when the arm's unit is the cluster (``unit_labels``), else its tasks.
    A slice inside one cluster (every cluster slice) describes that cluster's tasks only and
    says so; a slice with few clusters warns; none is ever zero-width.
    """
    if labels.size == 0:
        return []
    names, codes = np.unique(labels.astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    out = []
    for i, name in enumerate(names.tolist()):
        m = codes == i
        sub_labels = unit_labels[m] if unit_labels is not None else None
        n_cl = len(set(sub_labels.tolist())) if sub_labels is not None else 0
        if sub_labels is not None and n_cl >= 2:
            sub = Unit("cluster", sub_labels, n_cl, f"{n_cl} clusters")
        else:
            sub = Unit("task", None, int(m.sum()), "the slice's tasks")
        mi = mean_interval(rates[m], sub, confidence)
        rec: SliceRow = {
            "name": str(name),
            "tasks": int(m.sum()),
            "trials": int(n_trials[m].sum()),
            "estimate": mi["estimate"],
            "lo": mi["lo"],
            "hi": mi["hi"],
            "n": mi["n"],
            "unit": mi["unit"],
            "confidence": mi["confidence"],
            "method": mi["method"],
        }
        if sub_labels is not None and n_cl == 1:
            rec["warning"] = (
                "one cluster: the interval treats its tasks as independent and describes "
                "this cluster's tasks only"
            )
        elif mi.get("warning"):
            rec["warning"] = mi["warning"]
        out.append(rec)
    return out


def stratified_section(
    rates: np.ndarray,
    strata: np.ndarray,
    weights: np.ndarray,
    unit: Unit,
    confidence: float,
) -> Stratified | None:
    """Reweighted estimate with Kish n_eff when strata or non-unit weights are declared.

    With strata: Σ_h w_h p̂_h with w_h the stratum's share of the task weights and the seed
    002 standard error. With weights only: the weighted mean of per-task rates with a
    cluster-aware interval.
    """
    declared = np.array([s is not None for s in strata.tolist()], dtype=bool)
    if rates.size == 0 or (not declared.any() and np.all(weights == 1.0)):
        return None
    n_eff = kish_effective_n(weights)
    base: Stratified = {
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
        # Σ_h w_h p̂_h as a weighted mean of per-task rates (weight w_h / n_h per task), with
        # the shared method: residuals from stratum means, summed per cluster (CR1 + t), so
        # within-cluster correlation widens the interval (the stratified SE of the estimands guide is the special case
        # of independent single-trial tasks).
        e = mean_estimate(
            rates,
            unit.labels if unit.kind == "cluster" else None,
            weights=(share / n_h)[codes],
            kind="rate",
            confidence=confidence,
            strata=labels,
        )
        est = e.estimate
        out: Stratified = {
            **base,
            "estimate": est,
            "se": e.se,
            "lo": e.lo,
            "hi": e.hi,
            "method": f"stratified estimate Σ_h w_h p̂_h (w_h = the stratum's share of task "
            f"weight); {e.method}",
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
        if e.warning:
            out["warning"] = e.warning
        return out
    mi = mean_interval(rates, unit, confidence, weights=weights)
    return {**mi, **base}
