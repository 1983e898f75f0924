"""The full suite's score from a subset run: one function every view calls.

A run on a declared subset (``subset:``) holds n of the suite's N tasks. What it estimates
is the full suite's expected success rate, and the estimator depends on how the tasks were
drawn: design-based (``harness.stats.subset``: finite-population correction, clusters,
strata weighted back) for random and stratified draws, model-based (2PL,
``harness.stats.irt``, naming the fit's version) for anchor and midrange draws, which are
not random and say nothing by design alone. Paired deltas run on the same subset.
"""

from __future__ import annotations

from collections import Counter
from typing import TypedDict

import numpy as np

from harness.analysis.table import Trials
from harness.config.subset import FitRecord, SubsetDraw
from harness.stats import irt
from harness.stats import subset as sub

HOW = {
    "random": "a random subset",
    "stratified": "a stratified subset",
    "anchors": "an anchor set (2PL)",
    "midrange": "a midrange anchor set (2PL)",
}


class FullSuite(TypedDict, total=False):
    """The full suite's score (or a delta of it) estimated from a subset run."""

    estimate: float | None
    lo: float | None
    hi: float | None
    se: float | None
    n: int
    """Tasks the estimate read (with a counted trial)."""
    N: int
    """Tasks in the full suite."""
    method: str
    basis: str
    """'design' (the draw's randomness) or 'model' (the 2PL fit: right as far as it holds)."""
    fit_version: str | None
    theta: float | None
    theta_se: float | None
    label: str
    """'full-suite estimate from 50 of 500 tasks (a random subset)', plus the fit."""
    se_full: float | None
    """The SE a full run would have for the same quantity: the trials' noise alone over all
    N tasks, sqrt(v̄_w/N) (v̄_w from the tasks' repeated trials; with one trial per task
    its bound ȳ(1 − ȳ))."""


def label(draw: SubsetDraw, n: int) -> str:
    """How a subset estimate names itself, in every view."""
    total = len(draw.get("population") or [])
    method = draw.get("method", "")
    text = f"full-suite estimate from {n} of {total} tasks ({HOW.get(method, method)}"
    if draw.get("unit") == "cluster" and method == "random":
        text = text.replace("a random subset", "random whole clusters")
    if fit := draw.get("fit"):
        text += f", model-based: fit v{fit.get('version')}"
    return text + ")"


def _design(
    draw: SubsetDraw, ids: list[str], y: np.ndarray, within: np.ndarray, confidence: float
) -> sub.SubsetEstimate:
    pop = draw.get("population") or []
    total = len(pop)
    if draw.get("method") == "stratified":
        key = "cls" if draw.get("by", "class") == "class" else "cluster"
        of = {p["id"]: p[key] for p in pop}  # type: ignore[literal-required]
        counts = Counter(of.values())
        return sub.stratified_subset_estimate(
            y, [of[i] for i in ids], dict(counts), within, confidence
        )
    if draw.get("unit") == "cluster":
        cluster = {p["id"]: p["cluster"] for p in pop}
        n_clusters = len({p["cluster"] for p in pop})
        return sub.cluster_subset_estimate(
            y, [cluster[i] for i in ids], total, n_clusters, within, confidence
        )
    return sub.subset_estimate(y, total, within, confidence)


def per_task(trials: Trials, denominator: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(task ids, passes, counted trials) over the tasks as written, in id order."""
    from harness.release.compare import task_counts

    ids, passes, counted, _ = task_counts(trials, denominator)
    return ids, np.asarray(passes, dtype=float), np.asarray(counted, dtype=float)


def _rates(passes: np.ndarray, counted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-task rates and their within-task variance p(1 − p)/(m − 1) (NaN at m = 1)."""
    p = passes / counted
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(counted > 1, p * (1 - p) / (counted - 1), np.nan)
    return p, within


def _se_full(y: np.ndarray, within: np.ndarray, total: int) -> float:
    known = within[np.isfinite(within)]
    v = float(known.mean()) if known.size else float(y.mean() * (1 - y.mean()))
    return float(np.sqrt(v / total))


def full_run_se(trials: Trials, denominator: str = "failure") -> float | None:
    """A full run's SE as an estimate of its suite's expected success rate: the trials'
    noise alone over its tasks (the tasks are the suite, not a sample of it)."""
    ids, passes, counted = per_task(trials, denominator)
    if not ids:
        return None
    return _se_full(*_rates(passes, counted), len(ids))


def _empty(draw: SubsetDraw) -> FullSuite:
    return FullSuite(
        estimate=None, lo=None, hi=None, se=None, n=0, N=len(draw.get("population") or [])
    )


def model_score(
    fit: FitRecord,
    ids: list[str],
    passes: np.ndarray,
    counted: np.ndarray,
    population: list[str],
    confidence: float = 0.95,
) -> tuple[irt.Ability, irt.PredictedScore]:
    """θ from the anchors' results and the predicted score over ``population``, both by the
    fit's a and b (its scoring half: not the half that chose the anchors)."""
    a = np.array([fit["a"][i] for i in ids])
    b = np.array([fit["b"][i] for i in ids])
    est = irt.ability(passes, counted, a, b)
    a_all = np.array([fit["a"][i] for i in population])
    b_all = np.array([fit["b"][i] for i in population])
    return est, irt.predicted_score(est, a_all, b_all, confidence)


def full_suite(
    trials: Trials, draw: SubsetDraw, confidence: float = 0.95, denominator: str = "failure"
) -> FullSuite:
    """One arm's full-suite score from its subset trials."""
    ids, passes, counted = per_task(trials, denominator)
    if not ids:
        return _empty(draw)
    total = len(draw.get("population") or [])
    method = draw.get("method", "")
    out = FullSuite(
        n=len(ids),
        N=total,
        method=method,
        label=label(draw, len(ids)),
        se_full=_se_full(*_rates(passes, counted), total),
    )
    if fit := draw.get("fit"):
        pop = [p["id"] for p in draw.get("population") or []]
        est, score = model_score(fit, ids, passes, counted, pop, confidence)
        half = (score.hi - score.lo) / 2
        return out | FullSuite(
            estimate=score.estimate,
            lo=score.lo,
            hi=score.hi,
            se=half / _z(confidence),
            basis="model",
            fit_version=str(fit.get("version")),
            theta=est.theta,
            theta_se=est.se,
        )
    y, within = _rates(passes, counted)
    e = _design(draw, ids, y, within, confidence)
    return out | FullSuite(
        estimate=e.estimate, lo=e.lo, hi=e.hi, se=e.se, basis="design", fit_version=None
    )


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def full_suite_delta(
    baseline: Trials,
    candidate: Trials,
    draw: SubsetDraw,
    confidence: float = 0.95,
    denominator: str = "failure",
) -> FullSuite:
    """Candidate minus baseline on the full suite, from the tasks both ran (paired). Under
    a 2PL fit: the difference of the predicted scores, their SEs combined as independent."""
    if draw.get("fit"):
        one, two = (full_suite(t, draw, confidence, denominator) for t in (baseline, candidate))
        if one.get("se") is None or two.get("se") is None:
            return _empty(draw)
        d = float(two["estimate"] or 0) - float(one["estimate"] or 0)
        se = float(np.hypot(one["se"] or 0.0, two["se"] or 0.0))
        z = _z(confidence)
        return two | FullSuite(estimate=d, lo=d - z * se, hi=d + z * se, se=se)
    ids_a, pa, ma = per_task(baseline, denominator)
    ids_b, pb, mb = per_task(candidate, denominator)
    both = sorted(set(ids_a) & set(ids_b))
    if not both:
        return _empty(draw)
    ia = [ids_a.index(t) for t in both]
    ib = [ids_b.index(t) for t in both]
    ya, wa = _rates(pa[ia], ma[ia])
    yb, wb = _rates(pb[ib], mb[ib])
    e = _design(draw, both, yb - ya, np.nan_to_num(wa) + np.nan_to_num(wb), confidence)
    return FullSuite(
        estimate=e.estimate,
        lo=e.lo,
        hi=e.hi,
        se=e.se,
        n=len(both),
        N=e.N,
        method=draw.get("method", ""),
        basis="design",
        fit_version=None,
        label=label(draw, len(both)) + ", paired",
    )
