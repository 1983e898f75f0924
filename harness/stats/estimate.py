"""One interval per quantity: the method for a mean or a paired difference, chosen from the design.

Every view (report, compare, gate, class and cluster slices, HTML, Markdown, JSON) asks this
module for the interval of a mean of per-task values, so the same quantity never gets two
intervals. The choice reads only the design: how many tasks, how many independent clusters,
and whether the values are rates, paired differences or scores (metrics guide, agent-evaluation guide and when-not-to-ship guide: match
the interval to the sampling unit; with few clusters use a method that holds its level).

- Clusters coarser than tasks: the bias-reduced cluster-robust (CR2) standard error with a
  Student t on Bell-McCaffrey degrees of freedom (``cr2_bm``). With equal cluster sizes it is
  exactly CR1 with t on C − 1 df, the one-sample t interval on cluster means; with unequal
  sizes CR1 + t(C − 1) under-covers (88–90% at 24 clusters of sizes 2–18) and CR2 + BM does
  not. ``benchmarks/coverage.py`` measures it at 6 to 60 clusters.
- Every task its own unit: a rate of per-task rates gets the Wilson interval over tasks
  (metrics guide and eval-harness guide: Wald fails near 0 and 1); a difference or a weighted mean gets CR1 + t on
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
from dataclasses import dataclass
from typing import Literal, TypedDict

import numpy as np

from harness.stats._util import as_1d_float, encode_labels, z_two_sided

Kind = Literal["rate", "difference", "score"]


class _Design(TypedDict):
    """The fields every ``Estimate`` of one call shares."""

    n: int
    unit: str
    n_units: int
    confidence: float


FEW_CLUSTERS = 10
"""Below this many independent clusters an interval carries a warning: CR1 with t(C − 1)
is the method that holds its level there, but it is wide and leans on similar cluster sizes."""

_RANGES: dict[str, tuple[float, float]] = {
    "rate": (0.0, 1.0),
    "difference": (-1.0, 1.0),
    "score": (-math.inf, math.inf),
}


class EstimateRecord(TypedDict):
    """``Estimate.as_dict()``: the same fields as JSON."""

    estimate: float
    lo: float
    hi: float
    se: float | None
    n: int
    unit: str
    n_units: int
    method: str
    method_key: str
    df: float | None
    confidence: float
    warning: str | None


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
    """'cr2-bm', 'wilson', 'no-variation' or 'one-unit'."""
    df: float | None
    confidence: float
    warning: str | None = None

    def as_dict(self) -> EstimateRecord:
        """The estimate as a JSON-able record, field for field."""
        return {
            "estimate": self.estimate,
            "lo": self.lo,
            "hi": self.hi,
            "se": self.se,
            "n": self.n,
            "unit": self.unit,
            "n_units": self.n_units,
            "method": self.method,
            "method_key": self.method_key,
            "df": self.df,
            "confidence": self.confidence,
            "warning": self.warning,
        }


def icc_anova(values: np.ndarray, codes: np.ndarray) -> float:
    """One-way ANOVA intra-cluster correlation of per-task values, clipped to [0, 1]."""
    g = int(codes.max()) + 1
    m = np.bincount(codes, minlength=g).astype(float)
    n = float(m.sum())
    if g < 2 or n <= g:
        return 0.0
    means = np.bincount(codes, weights=values, minlength=g) / m
    grand = float(values.mean())
    msb = float(np.dot(m, (means - grand) ** 2)) / (g - 1)
    msw = float(np.sum((values - means[codes]) ** 2)) / (n - g)
    m0 = (n - float(np.dot(m, m)) / n) / (g - 1)
    den = msb + (m0 - 1.0) * msw
    return float(min(1.0, max(0.0, (msb - msw) / den))) if den > 0 else 1.0


def cr2_bm(
    values: np.ndarray,
    codes: np.ndarray,
    w: np.ndarray,
    groups: np.ndarray | None = None,
) -> tuple[float, float]:
    """(SE, degrees of freedom) of a weighted mean by CR2 with Bell-McCaffrey df.

    CR2 (Bell & McCaffrey 2002) removes the downward bias of the cluster-robust variance that
    unequal cluster sizes cause: for a weighted mean the cluster's leverage is its weight
    share h_c = W_c/W, and its score is inflated by 1/sqrt(1 − h_c) (with equal sizes that is
    CR1's sqrt(C/(C − 1)) exactly). The df are Satterthwaite's for the variance estimator under
    Imbens and Kolesár's (2016) working model, tasks equicorrelated within clusters with the
    ANOVA intra-cluster correlation: with equal sizes exactly C − 1, with unequal sizes fewer,
    which keeps the t interval at its level where CR1 + t(C − 1) under-covers. ``groups``
    (strata) centre residuals on group means instead; the leverage then uses CR1's factor.
    """
    g = int(codes.max()) + 1
    total = float(w.sum())
    wc = np.bincount(codes, weights=w, minlength=g)
    if groups is None:
        centres = np.full(values.size, float(np.dot(w, values)) / total)
        a2 = 1.0 / np.maximum(1.0 - wc / total, 1e-12)
    else:
        gw = np.bincount(groups, weights=w)
        centres = (np.bincount(groups, weights=w * values) / np.where(gw > 0, gw, 1.0))[groups]
        a2 = np.full(g, g / (g - 1.0))
    sums = np.bincount(codes, weights=w * (values - centres), minlength=g)
    var = float(np.sum(a2 * sums * sums)) / (total * total)
    df = _bm_df(values, codes, w, wc, total, a2, groups)
    return math.sqrt(max(var, 0.0)), df


_DENSE_LIMIT = 4_000_000
"""Largest tasks × clusters (stratified) or clusters² matrix the df computation builds; past
it t on C − 1 df is used (by then t is all but normal)."""


def _bm_df(
    values: np.ndarray,
    codes: np.ndarray,
    w: np.ndarray,
    wc: np.ndarray,
    total: float,
    a2: np.ndarray,
    groups: np.ndarray | None,
) -> float:
    """Satterthwaite df of V = Σ_c a_c² S_c² / W², S = R'y with R = P'U_w (P centres y,
    U_w[i, c] = w_i when task i is in cluster c), y ~ (·, Ω) under the working model
    Ω = (1 − ρ)I + ρ·UU': df = tr(DQ)² / tr((DQ)²), Q = R'ΩR, D = diag(a²)."""
    g = wc.size
    if g * g > _DENSE_LIMIT or (groups is not None and values.size * g > _DENSE_LIMIT):
        return float(g - 1)
    rho = icc_anova(values, codes) if g < values.size else 0.0
    if groups is None:
        s2 = np.bincount(codes, weights=w * w, minlength=g)
        rr = np.diag(s2) - (np.outer(s2, wc) + np.outer(wc, s2)) / total
        rr += float(np.dot(w, w)) * np.outer(wc, wc) / (total * total)
        ur = np.diag(wc) - np.outer(wc, wc) / total
    else:
        n = values.size
        uw = np.zeros((n, g))
        uw[np.arange(n), codes] = w
        gw = np.bincount(groups, weights=w)
        per_group = np.zeros((int(groups.max()) + 1, g))
        np.add.at(per_group, groups, uw)
        r = uw - (w / gw[groups])[:, None] * per_group[groups]
        rr = r.T @ r
        ur = np.zeros((g, g))
        np.add.at(ur, codes, r)
    q = (1.0 - rho) * rr + rho * (ur.T @ ur)
    dq = a2[:, None] * q
    tr1 = float(np.trace(dq))
    tr2 = float(np.sum(dq * dq.T))
    df = tr1 * tr1 / tr2 if tr2 > 0 else float(g - 1)
    return min(float(g - 1), max(1.0, df))


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


# long: the choice of interval method by design (one unit, no variation, clusters, tasks) stays in
#   one place so every view shares it.
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
    taken from stratum means (a stratified estimate with fixed stratum shares, estimands guide,
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
    s_codes = None
    if strata is not None:
        _, s_codes = encode_labels(np.asarray(strata).astype(str))
        if s_codes.size != n:
            raise ValueError("strata must have one label per task")
    base = _Design(n=n, unit=unit, n_units=g, confidence=confidence)
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
    se, df = cr2_bm(x, codes, w, s_codes)
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

        w_lo, w_hi = wilson_interval(min(max(mean, 0.0), 1.0) * n, n, confidence)
        return Estimate(
            estimate=mean,
            lo=float(w_lo),
            hi=float(w_hi),
            se=se,
            method=f"Wilson score interval over {n} tasks, mean of per-task rates",
            method_key="wilson",
            df=None,
            **base,
        )
    from scipy.special import stdtrit

    q = float(stdtrit(df, 0.5 + confidence / 2.0))
    lo, hi = max(lo_r, mean - q * se), min(hi_r, mean + q * se)
    units = f"{g} clusters" if unit == "cluster" else f"{g} tasks (each its own unit)"
    strat = "stratified (residuals from stratum means); " if strata is not None else ""
    warning = None
    if few:
        warning = (
            f"only {g} clusters (fewer than {FEW_CLUSTERS}): the interval uses CR2 with t on "
            f"{df:.1f} df, which holds its level with few clusters but is wide"
        )
    return Estimate(
        estimate=mean,
        lo=lo,
        hi=hi,
        se=se,
        method=(
            f"{strat}cluster-robust (CR2) SE over {units}, Student t with {df:.1f} "
            "Bell-McCaffrey df"
        ),
        method_key="cr2-bm",
        df=round(df, 3),
        warning=warning,
        **base,
    )
