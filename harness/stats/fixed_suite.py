"""The fixed-suite interval: uncertainty from the trials only, the suite's tasks held fixed.

When-not-to-ship guide: "for a fixed-suite claim, analyze trial variability conditional on
the fixed tasks"; resampling tasks instead introduces a hypothetical changing task mix. The
estimand is this suite's own mean success probability θ = Σ_i w_i p_i / W (W = Σ w_i) over
*these* tasks, each p_i the chance one trial of task i succeeds; the superpopulation interval
(tasks or clusters drawn from a population) is for another quantity and over-covers this one.
With c_i of n_i trials passed, p̂_i = c_i / n_i,

    Var(θ̂) = Σ_i w_i² p_i (1 − p_i) / n_i / W²,  estimated with s_i² = n_i/(n_i − 1) · p̂_i (1 − p̂_i)

(unbiased within-task variance), v_i = w_i² s_i² / n_i, Student t on Satterthwaite's df
(Σ v_i)² / Σ v_i² / (n_i − 1), the interval formed on the logit scale like every rate's
(``harness.stats.bounds.logit_bounds``). A task with one trial shows no variance of its own:
then Σ p_i(1 − p_i) ≤ G·θ(1 − θ) (concavity) bounds the variance, i.e. Wilson over the G
tasks (Kish's W²/Σ w_i² of them when weighted), conservative. When no trial varied within any task (deterministic tasks, or
too few trials to see them vary), the shared count of 0 unlike trials among N gives the
Wilson bound u = z²/(N + z²) on the share that could differ: θ̂ ± u·range, clipped. Assumes
trials of a task are independent given the task.
"""

from __future__ import annotations

import numpy as np

from harness.stats._util import as_1d_float
from harness.stats.estimate import Estimate
from harness.stats.mean_intervals import Intervals, no_variation_bounds, t_quantile, wilson_bounds

ESTIMAND = (
    "mean success probability over this suite's tasks, held fixed (fixed-suite: the interval "
    "counts trial-to-trial variation only, not which tasks the suite holds)"
)
KIND_T, KIND_ONE_TRIAL, KIND_NO_VARIATION = 0, 1, 2


def fixed_suite_bounds(
    passed: np.ndarray, trials: np.ndarray, weights: np.ndarray, confidence: float
) -> Intervals:
    """The fixed-suite interval (module docstring) for each row of ``passed`` (samples × tasks;
    ``trials`` and ``weights`` one per task): the batch form simulations read. ``case`` is
    ``KIND_T``, ``KIND_ONE_TRIAL`` or ``KIND_NO_VARIATION``."""
    from harness.stats.bounds import logit_bounds

    c = np.atleast_2d(np.asarray(passed, dtype=float))
    n = np.asarray(trials, dtype=float)
    w = np.asarray(weights, dtype=float)
    total = float(w.sum())
    p = c / n
    mean = p @ w / total
    one = bool(n.min() < 2)
    s2 = np.zeros_like(p) if one else n / (n - 1) * p * (1 - p)
    v = w * w * s2 / n
    var = v.sum(axis=1) / (total * total)
    se = np.sqrt(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.sum(v * v / np.maximum(n - 1, 1), axis=1)
        df = np.where(den > 0, v.sum(axis=1) ** 2 / den, np.nan)
    df = np.clip(np.nan_to_num(df, nan=1.0), 1.0, None)
    q = t_quantile(df, confidence)
    lo, hi = logit_bounds(mean, np.where(se > 0, se, 1.0), q)
    case = np.full(mean.shape, KIND_T)
    if one:
        kish = total * total / float(np.sum(w * w))
        lo, hi = wilson_bounds(mean, max(1, int(round(kish))), confidence)
        case[:] = KIND_ONE_TRIAL
    else:
        none = se == 0
        nv_lo, nv_hi = no_variation_bounds(mean, int(n.sum()), 0.0, 1.0, confidence)
        lo, hi = np.where(none, nv_lo, lo), np.where(none, nv_hi, hi)
        case = np.where(none, KIND_NO_VARIATION, case)
    return Intervals(mean=mean, lo=lo, hi=hi, se=se, df=df, case=case)


def fixed_suite_estimate(
    passed: object,
    trials: object,
    *,
    weights: object | None = None,
    confidence: float = 0.95,
) -> Estimate:
    """Estimate and interval of the suite's mean success probability, its tasks held fixed.

    ``passed``/``trials``: counted trials per task; ``weights``: per task (default 1).
    """
    c = as_1d_float(passed, "passed")
    n = as_1d_float(trials, "trials")
    if c.size == 0 or c.shape != n.shape or np.any(n < 1) or np.any(c > n) or np.any(c < 0):
        raise ValueError("need one pass count and trial count (>= 1) per task")
    w = np.ones(c.size) if weights is None else as_1d_float(weights, "weights")
    if w.shape != c.shape or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be one non-negative value per task, with a positive sum")
    b = fixed_suite_bounds(c, n, w, confidence)
    g, total = int(c.size), int(n.sum())
    case, df = int(b.case[0]), float(b.df[0])
    head = f"fixed suite of {g} tasks ({total} trials): trial-to-trial variation only"
    warning = None
    if case == KIND_ONE_TRIAL:
        method = (
            f"{head}; a task with one trial shows no variance of its own, so the bound "
            "θ(1 − θ) is used (Wilson over the tasks, conservative)"
        )
    elif case == KIND_NO_VARIATION:
        method = (
            f"{head}; no trial varied within a task, so the interval is the share of the "
            f"{total} trials that could differ (Wilson at 0 of {total}) times the range"
        )
        warning = (
            "no task's trials disagreed: the fixed-suite interval is a bound, and tight only "
            "if the tasks are deterministic"
        )
    else:
        method = (
            f"{head}, within-task variance, Student t with {df:.1f} Satterthwaite df, on the "
            "logit scale"
        )
    return Estimate(
        estimate=float(b.mean[0]),
        lo=float(b.lo[0]),
        hi=float(b.hi[0]),
        se=float(b.se[0]) if case == KIND_T else None,
        n=g,
        unit="trial",
        n_units=total,
        method=method,
        method_key="fixed-suite",
        df=round(df, 3) if case == KIND_T else None,
        confidence=confidence,
        warning=warning,
    )
