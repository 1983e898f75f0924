"""One interval per quantity: the method for a mean or a paired difference, chosen from the design.

Every view (report, compare, gate, class and cluster slices, HTML, Markdown, JSON) asks this
module for the interval of a mean of per-task values, so the same quantity never gets two
intervals. The choice reads only the design: how many tasks, how many independent clusters,
and whether the values are rates, paired differences or scores (seeds 000, 003, 004: match
the interval to the sampling unit; with few clusters use a method that holds its level).

- Clusters coarser than tasks: the cluster-robust (CR1) standard error with a Student t on
  C − 1 degrees of freedom. With equal cluster sizes it is exactly the one-sample t interval
  on cluster means; ``benchmarks/coverage.py`` measures it at 6 to 60 clusters.
- Every task its own unit: a rate of per-task rates gets the Wilson interval over tasks
  (seeds 000, 001: Wald fails near 0 and 1); a difference or a weighted mean gets CR1 + t on
  n − 1 df with each task its own cluster.
- No variation between units (every unit shows the same value, e.g. an A/A arm that agreed
  on every task): no standard error can be estimated, and zero width would be false. The
  population mean can differ from the shared value only through units unlike every observed
  one; at most a share u = z²/(G + z²) of units can be unlike (Wilson's bound at 0 of G),
  each by at most the value's range, so the interval is the shared value ± u·range, clipped.
  For 0/1 rates it equals Wilson at 0/G or G/G.
- One unit: nothing can be estimated; the interval is the whole range, with a warning.

Fewer than ``FEW_CLUSTERS`` clusters always carries a warning.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from harness.stats._util import as_1d_float, encode_labels, z_two_sided

Kind = Literal["rate", "difference", "score"]

FEW_CLUSTERS = 10
"""Below this many independent clusters an interval carries a warning: CR1 with t(C − 1)
is the method that holds its level there, but it is wide and leans on similar cluster sizes."""

_RANGES: dict[str, tuple[float, float]] = {
    "rate": (0.0, 1.0),
    "difference": (-1.0, 1.0),
    "score": (-math.inf, math.inf),
}


@dataclass(frozen=True)
class Estimate:
    """A mean of per-task values with its interval and the design it was read from."""

    estimate: float
    lo: float
    hi: float
    se: float | None
    """Standard error (None when none could be estimated)."""
    n: int
    """Tasks."""
    unit: str
    """The independent unit: 'cluster' or 'task'."""
    n_units: int
    """Independent units (clusters, or tasks when each task is its own unit)."""
    method: str
    """One sentence naming the method, for every view to print."""
    method_key: str
    """'cr1-t', 'wilson', 'no-variation' or 'one-unit'."""
    df: int | None
    confidence: float
    warning: str | None = None

    def as_dict(self) -> dict:
        """JSON-able record: estimate, lo, hi, se, n, unit, n_units, method, ... ."""
        return asdict(self)


def _residual_sums(
    values: np.ndarray, codes: np.ndarray, w: np.ndarray, centres: np.ndarray
) -> np.ndarray:
    """Per-unit sums of weighted residuals from ``centres`` (one centre per value)."""
    return np.bincount(codes, weights=w * (values - centres))


def _weights(weights: object | None, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = as_1d_float(weights, "weights")
    if w.shape != (n,) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be one non-negative value per task, with a positive sum")
    return w


def _unit_codes(clusters: object | None, n: int) -> tuple[str, np.ndarray]:
    if clusters is None:
        return "task", np.arange(n, dtype=np.intp)
    _, codes = encode_labels(np.asarray(clusters).astype(str))
    if codes.size != n:
        raise ValueError("clusters must have one label per task")
    g = int(codes.max()) + 1 if n else 0
    return ("cluster" if g < n else "task"), codes


def no_variation_interval(
    value: float, n_units: int, kind: Kind, confidence: float
) -> tuple[float, float]:
    """Interval for a mean whose G units all showed ``value`` (see the module docstring)."""
    lo_r, hi_r = _RANGES[kind]
    if not (math.isfinite(lo_r) and math.isfinite(hi_r)):
        return -math.inf, math.inf
    z = z_two_sided(confidence)
    u = z * z / (n_units + z * z)
    return max(lo_r, value - u * (value - lo_r)), min(hi_r, value + u * (hi_r - value))


def mean_estimate(
    values: object,
    clusters: object | None = None,
    *,
    weights: object | None = None,
    kind: Kind = "rate",
    confidence: float = 0.95,
    strata: object | None = None,
) -> Estimate:
    """Estimate and interval for the (weighted) mean of per-task values, method by design.

    Estimand: Σ_i w_i x_i / Σ_i w_i over the population of clusters (or tasks) the suite was
    drawn from, x_i a task's rate (mean over its trials), paired difference (candidate −
    baseline per-task rates) or score. ``clusters`` labels each task's cluster (None: tasks
    are independent). ``strata`` (optional) labels each task's stratum: residuals are then
    taken from stratum means (a stratified estimate with fixed stratum shares, seed 002,
    made cluster-aware). Rate and difference intervals are clipped to their range.
    """
    x = as_1d_float(values, "values")
    n = int(x.size)
    if n == 0:
        raise ValueError("no tasks: nothing to estimate")
    w = _weights(weights, n)
    unit, codes = _unit_codes(clusters, n)
    g = int(codes.max()) + 1
    total = float(w.sum())
    mean = float(np.dot(w, x) / total)
    lo_r, hi_r = _RANGES[kind]
    if strata is not None:
        _, s_codes = encode_labels(np.asarray(strata).astype(str))
        if s_codes.size != n:
            raise ValueError("strata must have one label per task")
        s_w = np.bincount(s_codes, weights=w)
        s_mean = np.bincount(s_codes, weights=w * x) / np.where(s_w > 0, s_w, 1.0)
        centres = s_mean[s_codes]
    else:
        centres = np.full(n, mean)
    base = dict(n=n, unit=unit, n_units=g, confidence=confidence)
    few = unit == "cluster" and g < FEW_CLUSTERS
    if g < 2:
        what = "cluster" if unit == "cluster" else "task"
        return Estimate(
            estimate=mean,
            lo=lo_r,
            hi=hi_r,
            se=None,
            method=f"one {what}: no interval can be estimated; the whole range is shown",
            method_key="one-unit",
            df=None,
            warning=f"only one independent {what}: the interval is the whole range",
            **base,
        )
    sums = _residual_sums(x, codes, w, centres)
    se = math.sqrt(float(np.dot(sums, sums)) * g / (g - 1)) / total
    spread = float(np.max(x) - np.min(x))
    if se == 0.0 or spread == 0.0:
        value = mean
        lo, hi = no_variation_interval(value, g, kind, confidence)
        units = "clusters" if unit == "cluster" else "tasks"
        return Estimate(
            estimate=mean,
            lo=lo,
            hi=hi,
            se=0.0,
            method=(
                f"no variation: all {g} {units} show the same value; bound = the share of "
                f"{units} that could differ (Wilson at 0 of {g}) times the range"
            ),
            method_key="no-variation",
            df=None,
            warning=(
                f"every one of the {g} {units} shows the same value: no standard error can be "
                "estimated, so the interval is a bound, not a standard interval"
            ),
            **base,
        )
    if unit == "task" and kind == "rate" and weights is None and strata is None:
        from harness.stats.intervals import wilson_interval

        lo, hi = wilson_interval(min(max(mean, 0.0), 1.0) * n, n, confidence)
        return Estimate(
            estimate=mean,
            lo=float(lo),
            hi=float(hi),
            se=se,
            method=f"Wilson score interval over {n} tasks, mean of per-task rates",
            method_key="wilson",
            df=None,
            **base,
        )
    from scipy.special import stdtrit

    q = float(stdtrit(g - 1, 0.5 + confidence / 2.0))
    lo, hi = max(lo_r, mean - q * se), min(hi_r, mean + q * se)
    units = f"{g} clusters" if unit == "cluster" else f"{g} tasks (each its own unit)"
    strat = "stratified (residuals from stratum means); " if strata is not None else ""
    warning = None
    if few:
        warning = (
            f"only {g} clusters (fewer than {FEW_CLUSTERS}): CR1 with t on {g - 1} df is used; "
            "the interval is wide and assumes clusters of similar size"
        )
    return Estimate(
        estimate=mean,
        lo=lo,
        hi=hi,
        se=se,
        method=f"{strat}cluster-robust (CR1) SE over {units}, Student t with {g - 1} df",
        method_key="cr1-t",
        df=g - 1,
        warning=warning,
        **base,
    )
