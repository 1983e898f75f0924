"""One interval per quantity: the method for a mean or a paired difference, chosen from the design.

Every view (report, compare, gate, class and cluster slices, HTML, Markdown, JSON) asks this
module for the interval of a mean of per-task values, so the same quantity never gets two
intervals. The choice reads only the design: how many tasks, how many independent clusters,
and whether the values are rates (in [0, 1]) or unbounded scores (metrics guide,
agent-evaluation guide and when-not-to-ship guide: match the interval to the sampling unit;
with few clusters use a method that holds its level). Formulas: docs/statistics.md.

- Clusters coarser than tasks, or task weights: the bias-reduced cluster-robust (CR2)
  standard error with Student t on Imbens–Kolesár degrees of freedom (``ClusterDesign``).
  A rate's interval is formed on the logit scale (``harness.stats.bounds``): near the top of
  the scale the symmetric t bound lands above the truth too often.
- Every task its own unit, equal weights: a rate gets the Wilson interval over tasks.
- A paired difference (``paired_estimate``): MOVER from the two arms' intervals and their
  correlation, so each arm's skew carries over.
- Decisions (``cautious=True``, the gate's bounds): the more cautious end of the logit-scale
  CR2, cluster-jackknife and Hall skew-corrected bounds.
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

from harness.stats._util import as_1d_float, encode_labels
from harness.stats.cluster_design import DENSE_LIMIT, ClusterDesign

Kind = Literal["rate", "difference", "score"]
"""'rate' and 'score' for ``mean_estimate`` (values in [0, 1], unbounded); 'difference' names
the range of a paired difference (``paired_estimate``)."""


class _Design(TypedDict):
    """The fields every ``Estimate`` of one call shares."""

    n: int
    unit: str
    n_units: int
    confidence: float


FEW_CLUSTERS = 10
"""Below this many independent clusters an interval carries a warning: CR2 with t on
Imbens–Kolesár df holds its level there, but it is wide and leans on the working model."""

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
    """'logit-cr2', 'cr2-ik' (unbounded scores), 'wilson', 'mover', 'cautious',
    'no-variation' or 'one-unit'."""
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
    return float(ClusterDesign.of(codes).icc(np.asarray(values, dtype=float)[None, :])[0])


def cr2_ik(
    values: np.ndarray,
    codes: np.ndarray,
    w: np.ndarray,
    groups: np.ndarray | None = None,
) -> tuple[float, float]:
    """(SE, degrees of freedom) of a weighted mean by CR2 with Imbens–Kolesár df.

    CR2 (Bell & McCaffrey 2002) removes the downward bias of the cluster-robust variance that
    unequal cluster sizes cause: for a weighted mean the cluster's leverage is its weight
    share h_c = W_c/W, and its score is inflated by 1/sqrt(1 − h_c) (with equal sizes that is
    CR1's sqrt(C/(C − 1)) exactly). The df are Satterthwaite's for the variance estimator under
    Imbens and Kolesár's (2016) working model, tasks equicorrelated within clusters with the
    ANOVA intra-cluster correlation: with equal sizes exactly C − 1, with unequal sizes fewer
    (``ClusterDesign``). ``groups`` (strata) centre residuals on group means instead; the
    leverage then uses the equal-size factor C/(C − 1).
    """
    if groups is None:
        _, se_a, df_a = ClusterDesign.of(codes, w).cr2(values[None, :])
        return float(se_a[0]), float(df_a[0])
    g = int(codes.max()) + 1
    total = float(w.sum())
    wc = np.bincount(codes, weights=w, minlength=g)
    gw = np.bincount(groups, weights=w)
    centres = (np.bincount(groups, weights=w * values) / np.where(gw > 0, gw, 1.0))[groups]
    a2 = np.full(g, g / (g - 1.0))
    sums = np.bincount(codes, weights=w * (values - centres), minlength=g)
    var = float(np.sum(a2 * sums * sums)) / (total * total)
    df = _stratified_df(values, codes, w, wc, total, a2, groups)
    return math.sqrt(max(var, 0.0)), df


def _stratified_df(
    values: np.ndarray,
    codes: np.ndarray,
    w: np.ndarray,
    wc: np.ndarray,
    total: float,
    a2: np.ndarray,
    groups: np.ndarray,
) -> float:
    """Satterthwaite df of the stratified variance under the Imbens–Kolesár working model
    (the unstratified case lives in ``ClusterDesign.df``): df = tr(DQ)²/tr((DQ)²)."""
    g = wc.size
    if g * g > DENSE_LIMIT or values.size * g > DENSE_LIMIT:
        return float(g - 1)
    rho = icc_anova(values, codes) if g < values.size else 0.0
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
    from harness.stats.mean_intervals import no_variation_bounds

    lo_r, hi_r = _RANGES[kind]
    if not (math.isfinite(lo_r) and math.isfinite(hi_r)):
        return -math.inf, math.inf
    lo, hi = no_variation_bounds(np.array([value]), n_units, lo_r, hi_r, confidence)
    return float(lo[0]), float(hi[0])


def _units_text(unit: str, g: int) -> str:
    return f"{g} clusters" if unit == "cluster" else f"{g} tasks (each its own unit)"


def _edge_case(
    mean: float, case: int, lo: float, hi: float, unit: str, g: int, base: _Design
) -> Estimate | None:
    """The Estimate of a sample with one unit or no variation, else None."""
    from harness.stats.mean_intervals import NO_VARIATION, ONE_UNIT

    units = "clusters" if unit == "cluster" else "tasks"
    if case == ONE_UNIT:
        what = "cluster" if unit == "cluster" else "task"
        return Estimate(
            estimate=mean,
            lo=lo,
            hi=hi,
            se=None,
            method=f"one {what}: no interval can be estimated; the whole range is shown",
            method_key="one-unit",
            df=None,
            warning=f"only one independent {what}: the interval is the whole range",
            **base,
        )
    if case == NO_VARIATION:
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
    return None


def _few_warning(unit: str, g: int, df: float) -> str | None:
    if unit != "cluster" or g >= FEW_CLUSTERS:
        return None
    return (
        f"only {g} clusters (fewer than {FEW_CLUSTERS}): the interval uses CR2 with t on "
        f"{df:.1f} Imbens–Kolesár df, which holds its level with few clusters but is wide"
    )


CAUTIOUS = (
    "the more cautious end of three logit-scale bounds (CR2, cluster jackknife, Hall's "
    "skewness correction)"
)


def mean_estimate(
    values: object,
    clusters: object | None = None,
    *,
    weights: object | None = None,
    kind: Kind = "rate",
    confidence: float = 0.95,
    strata: object | None = None,
    cautious: bool = False,
    trials: object | None = None,
) -> Estimate:
    """Estimate and interval for the (weighted) mean of per-task values, method by design.

    Estimand: Σ_i w_i x_i / Σ_i w_i over the population of clusters (or tasks) the suite was
    drawn from, x_i a task's rate (mean over its trials, in [0, 1]: ``kind="rate"``) or an
    unbounded score (``kind="score"``: CR2 + t, symmetric). ``clusters`` labels each task's
    cluster (None: tasks are independent). ``strata`` (optional) labels each task's stratum:
    residuals are then taken from stratum means (a stratified estimate with fixed stratum
    shares, estimands guide, made cluster-aware). ``cautious``: the decision bound of a rate
    (the gate's), the more cautious end of the logit-scale constructions; ``trials`` (counted
    trials per task, default 1) tells its skewness correction how binomial each task is.
    Assumes clusters are independent draws; a paired difference goes through
    ``paired_estimate``.
    """
    x = as_1d_float(values, "values")
    n = int(x.size)
    if n == 0:
        raise ValueError("no tasks: nothing to estimate")
    if kind == "difference":
        raise ValueError("a paired difference goes through paired_estimate")
    w = _weights(weights, n)
    unit, codes = _unit_codes(clusters, n)
    g = int(codes.max()) + 1
    base = _Design(n=n, unit=unit, n_units=g, confidence=confidence)
    if strata is not None:
        return _stratified(x, codes, w, strata, kind, unit, g, base)
    design = ClusterDesign.of(codes, w)
    if kind == "score":
        return _score(design, x, unit, g, base)
    from harness.stats.mean_intervals import rate_intervals

    wilson = unit == "task" and strata is None and bool(np.all(w == w[0]))
    t = None if trials is None else as_1d_float(trials, "trials")
    iv = rate_intervals(design, x[None, :], confidence, cautious=cautious, wilson=wilson, trials=t)
    mean, lo, hi = float(iv.mean[0]), float(iv.lo[0]), float(iv.hi[0])
    edge = _edge_case(mean, int(iv.case[0]), lo, hi, unit, g, base)
    if edge is not None:
        return edge
    se, df = float(iv.se[0]), float(iv.df[0])
    if cautious:
        key, text = "cautious", f"{CAUTIOUS} over {_units_text(unit, g)}, t with {df:.1f} "
        text += "Imbens–Kolesár df"
        if wilson:
            text = f"the more cautious of Wilson over {n} tasks and {text}"
    elif wilson:
        key, text = "wilson", f"Wilson score interval over {n} tasks, mean of per-task rates"
    else:
        key = "logit-cr2"
        text = (
            f"cluster-robust (CR2) SE over {_units_text(unit, g)}, interval on the logit "
            f"scale, Student t with {df:.1f} Imbens–Kolesár df"
        )
    return Estimate(
        estimate=mean,
        lo=lo,
        hi=hi,
        se=se,
        method=text,
        method_key=key,
        df=None if key == "wilson" else round(df, 3),
        warning=_few_warning(unit, g, df),
        **base,
    )


def _score(design: ClusterDesign, x: np.ndarray, unit: str, g: int, base: _Design) -> Estimate:
    """An unbounded mean: CR2 + t on Imbens–Kolesár df, symmetric."""
    from harness.stats.mean_intervals import METHOD, NO_VARIATION, ONE_UNIT, t_quantile

    mean, se_a, df_a = design.cr2(x[None, :])
    m, se, df = float(mean[0]), float(se_a[0]), float(df_a[0])
    case = ONE_UNIT if g < 2 else NO_VARIATION if se == 0 or np.ptp(x) == 0 else METHOD
    edge = _edge_case(m, case, -math.inf, math.inf, unit, g, base)
    if edge is not None:
        return edge
    q = float(t_quantile(np.array([df]), base["confidence"])[0])
    return Estimate(
        estimate=m,
        lo=m - q * se,
        hi=m + q * se,
        se=se,
        method=f"cluster-robust (CR2) SE over {_units_text(unit, g)}, Student t with {df:.1f} "
        "Imbens–Kolesár df",
        method_key="cr2-ik",
        df=round(df, 3),
        warning=_few_warning(unit, g, df),
        **base,
    )


def _stratified(
    x: np.ndarray,
    codes: np.ndarray,
    w: np.ndarray,
    strata: object,
    kind: Kind,
    unit: str,
    g: int,
    base: _Design,
) -> Estimate:
    """Residuals from stratum means, summed per cluster; CR2 + t, on the logit scale for a rate."""
    from harness.stats.bounds import logit_bounds
    from harness.stats.mean_intervals import NO_VARIATION, ONE_UNIT, t_quantile

    _, s_codes = encode_labels(np.asarray(strata).astype(str))
    if s_codes.size != x.size:
        raise ValueError("strata must have one label per task")
    mean = float(np.dot(w, x) / w.sum())
    lo_r, hi_r = _RANGES[kind]
    if g < 2:
        edge = _edge_case(mean, ONE_UNIT, lo_r, hi_r, unit, g, base)
        assert edge is not None
        return edge
    se, df = cr2_ik(x, codes, w, s_codes)
    if se == 0.0 or np.ptp(x) == 0.0:
        lo, hi = no_variation_interval(mean, g, kind, base["confidence"])
        edge = _edge_case(mean, NO_VARIATION, lo, hi, unit, g, base)
        assert edge is not None
        return edge
    q = t_quantile(np.array([df]), base["confidence"])
    if kind == "rate":
        lo_a, hi_a = logit_bounds(np.array([mean]), np.array([se]), q)
        lo, hi, scale = float(lo_a[0]), float(hi_a[0]), " on the logit scale"
    else:
        lo, hi, scale = mean - float(q[0]) * se, mean + float(q[0]) * se, ""
    return Estimate(
        estimate=mean,
        lo=lo,
        hi=hi,
        se=se,
        method=(
            f"stratified (residuals from stratum means); cluster-robust (CR2) SE over "
            f"{_units_text(unit, g)}{scale}, Student t with {df:.1f} Imbens–Kolesár df"
        ),
        method_key="logit-cr2" if kind == "rate" else "cr2-ik",
        df=round(df, 3),
        warning=_few_warning(unit, g, df),
        **base,
    )


def paired_estimate(
    baseline: object,
    candidate: object,
    clusters: object | None = None,
    *,
    weights: object | None = None,
    confidence: float = 0.95,
    trials: tuple[object, object] | None = None,
) -> Estimate:
    """Estimate and interval for the (weighted) mean of candidate − baseline per-task rates.

    Estimand: Σ_i w_i (b_i − a_i) / Σ_i w_i over the population of clusters (or tasks), b_i
    and a_i the two arms' rates on task i. Interval: MOVER (Zou and Donner 2008) from each
    arm's interval — logit-scale CR2 over clusters or weighted tasks, Wilson over equally
    weighted independent tasks (then it is Newcombe's paired method) — at the critical value
    of the difference's own Imbens–Kolesár df, with the CR2 correlation of the arms' means.
    The gate reads the ends of this interval at level 2c − 1 (its one-sided errors are
    measured in ``benchmarks/coverage.py``); near 0 or 1 also Hall's (``paired_intervals``).
    ``trials``: each arm's counted trials per task (default 1). Assumes independent
    clusters; the arms' trials need not share seeds.
    """
    from harness.stats.mean_intervals import near_edge_note, paired_intervals

    a = as_1d_float(baseline, "baseline")
    b = as_1d_float(candidate, "candidate")
    if a.shape != b.shape:
        raise ValueError("baseline and candidate need one rate per task each")
    n = int(a.size)
    if n == 0:
        raise ValueError("no tasks: nothing to estimate")
    w = _weights(weights, n)
    unit, codes = _unit_codes(clusters, n)
    g = int(codes.max()) + 1
    base = _Design(n=n, unit=unit, n_units=g, confidence=confidence)
    design = ClusterDesign.of(codes, w)
    wilson = unit == "task" and bool(np.all(w == w[0]))
    t = None
    if trials is not None:
        t = (as_1d_float(trials[0], "trials"), as_1d_float(trials[1], "trials"))
    iv = paired_intervals(design, a[None, :], b[None, :], confidence, wilson=wilson, trials=t)
    mean, lo, hi = float(iv.mean[0]), float(iv.lo[0]), float(iv.hi[0])
    edge = _edge_case(mean, int(iv.case[0]), lo, hi, unit, g, base)
    if edge is not None:
        return edge
    df = float(iv.df[0])
    arm = (
        f"Wilson over {n} tasks"
        if wilson
        else f"logit-scale CR2 over {_units_text(unit, g)}, t with {df:.1f} Imbens–Kolesár df"
    )
    method = f"paired MOVER from each arm's interval ({arm}) and their correlation"
    method += near_edge_note(float(a @ w) / float(w.sum()), wilson)
    return Estimate(
        estimate=mean,
        lo=lo,
        hi=hi,
        se=float(iv.se[0]),
        method=method,
        method_key="mover",
        df=round(df, 3),
        warning=_few_warning(unit, g, df),
        **base,
    )
