"""The full suite's score estimated from a subset of its tasks, and the ± that goes with it.

A subset run answers the full suite's question ("the expected success rate over all N of
the suite's tasks") from n of them. Two things vary: which tasks were drawn (the design,
a draw without replacement from a finite set, so its variance carries the finite-population
correction 1 − n/N) and the trials on the drawn tasks (the agent's own noise, which a full
run has too). Cochran's two-stage variance adds them:

    V = (1 − f) s²/n + f · v̄_w/n,   f = n/N

with s² the spread of the per-task scores (ddof = 1), v̄_w the mean per-task variance of a
task's mean score over its trials. At n = N the first term is 0 and the second is the
fixed-suite variance of a full run; at one trial per task v̄_w is unknown and left out
(the first term then carries it). Stratified subsets apply it within each stratum and
weight by the strata's shares of the full suite; cluster subsets (whole clusters drawn)
apply it to cluster totals through the ratio estimator. Paired deltas are the same
estimator on per-task differences of two arms run on the same subset.

Sources: metrics guide (SE = sqrt(p(1 − p)/n · (N − n)/(N − 1)), stratify and weight back,
pair on the same subset); Cochran, *Sampling Techniques* (3rd ed., 1977), §5.4 (stratified),
§6.11 (ratio estimator for clusters), §10.3 (two-stage sampling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats._util import as_1d_float, encode_labels, z_two_sided


@dataclass(frozen=True)
class SubsetEstimate:
    """The full suite's score estimated from n of its N tasks."""

    estimate: float
    se: float
    lo: float
    hi: float
    n: int
    """Tasks run."""
    N: int
    """Tasks in the full suite."""
    design: str
    """'random' (tasks drawn), 'cluster' (whole clusters drawn) or 'stratified'."""
    units: int
    """Independent units drawn (tasks, clusters, or tasks across strata)."""
    units_total: int
    """Units in the full suite."""
    confidence: float

    @property
    def fraction(self) -> float:
        return self.n / self.N

    def describe(self) -> str:
        """One line naming what was estimated from what."""
        how = {"random": "a random", "cluster": "a cluster", "stratified": "a stratified"}
        return (
            f"full-suite estimate from {self.n} of {self.N} tasks "
            f"({how.get(self.design, self.design)} subset)"
        )


def _within(scores: np.ndarray, within_var: object | None) -> np.ndarray:
    if within_var is None:
        return np.zeros_like(scores)
    v = as_1d_float(np.nan_to_num(np.asarray(within_var, dtype=float), nan=0.0), "within_var")
    if v.shape != scores.shape:
        raise ValueError("within_var must have one value per task")
    out: np.ndarray = np.nan_to_num(v, nan=0.0)
    return out


def _two_stage_var(y: np.ndarray, v: np.ndarray, n_pop: int) -> float:
    """Variance of the mean of ``y`` (n drawn of ``n_pop``) under two-stage sampling."""
    n = y.size
    f = n / n_pop
    between = float(np.var(y, ddof=1)) / n if n > 1 else 0.0
    return (1.0 - f) * between + f * float(v.mean()) / n


def _interval(est: float, var: float, confidence: float) -> tuple[float, float, float]:
    se = math.sqrt(max(var, 0.0))
    z = z_two_sided(confidence)
    return se, est - z * se, est + z * se


def subset_estimate(
    scores: object,
    N: int,
    within_var: object | None = None,
    confidence: float = 0.95,
) -> SubsetEstimate:
    """Full-suite mean score from a simple random subset of tasks (one score per task).

    ``scores``: each drawn task's mean score over its trials (its success rate);
    ``within_var``: each task's variance of that mean over trials (p(1 − p)/(m − 1) for m
    binary trials; None or NaN where unknown). Estimand: the mean over all N tasks of the
    task's expected score. Assumes the n tasks were drawn uniformly without replacement.
    """
    y = as_1d_float(scores, "scores")
    n = y.size
    if not 0 < n <= N:
        raise ValueError(f"need 0 < n <= N (n = {n}, N = {N})")
    est = float(y.mean())
    se, lo, hi = _interval(est, _two_stage_var(y, _within(y, within_var), N), confidence)
    if n < N and est in (0.0, 1.0) and float(np.ptp(y)) == 0.0:
        lo, hi = _no_variation(est, n, N, confidence)
    return SubsetEstimate(est, se, lo, hi, n, N, "random", n, N, confidence)


def _no_variation(est: float, n: int, N: int, confidence: float) -> tuple[float, float]:
    """Every drawn task passed (or failed): the spread is 0, but the N − n tasks not drawn
    may differ. The exact bound: the most failing (passing) tasks F the suite can hold
    while P(no such task among n drawn) = C(N − F, n)/C(N, n) stays at least (1 − c)/2."""
    alpha = (1.0 - confidence) / 2.0
    prob, f = 1.0, 0
    while f < N - n:
        nxt = prob * (N - f - n) / (N - f)  # C(N − f − 1, n)/C(N, n) from C(N − f, n)/C(N, n)
        if nxt < alpha:
            break
        prob, f = nxt, f + 1
    return (1.0 - f / N, 1.0) if est == 1.0 else (0.0, f / N)


def cluster_subset_estimate(
    scores: object,
    clusters: object,
    N: int,
    n_clusters_total: int,
    within_var: object | None = None,
    confidence: float = 0.95,
) -> SubsetEstimate:
    """Full-suite mean score when whole clusters were drawn (every task of a drawn cluster).

    Ratio estimator r = Σ_c y_c / Σ_c m_c (y_c the cluster's score total, m_c its tasks),
    V = (1 − c/C) Σ_c (y_c − r m_c)² / ((c − 1) c M̄²) + (c/C) Σ_i v_i / (Σ m_c)² with M̄ = N/C
    (Cochran §6.11, two-stage as above). Assumes clusters drawn uniformly without replacement.
    """
    y = as_1d_float(scores, "scores")
    v = _within(y, within_var)
    _, codes = encode_labels(clusters)
    if codes.shape != y.shape:
        raise ValueError("clusters must have one label per score")
    totals = np.bincount(codes, weights=y)
    sizes = np.bincount(codes).astype(float)
    c = totals.size
    if not 0 < c <= n_clusters_total or y.size > N:
        raise ValueError("need 0 < clusters drawn <= clusters in the suite, tasks <= N")
    r = float(totals.sum() / sizes.sum())
    f = c / n_clusters_total
    m_bar = N / n_clusters_total
    resid = totals - r * sizes
    between = float(np.dot(resid, resid)) / ((c - 1) * c * m_bar**2) if c > 1 else 0.0
    var = (1.0 - f) * between + f * float(v.sum()) / float(sizes.sum()) ** 2
    se, lo, hi = _interval(r, var, confidence)
    return SubsetEstimate(r, se, lo, hi, y.size, N, "cluster", c, n_clusters_total, confidence)


def stratified_subset_estimate(
    scores: object,
    strata: object,
    population: dict[str, int],
    within_var: object | None = None,
    confidence: float = 0.95,
) -> SubsetEstimate:
    """Full-suite mean score from a stratified subset, weighted back to the suite's mix.

    ``population``: each stratum's task count in the full suite (N_h); weights W_h = N_h/N.
    Estimate Σ_h W_h ȳ_h, variance Σ_h W_h² V_h with V_h the two-stage variance within the
    stratum (Cochran §5.4). A stratum the subset holds one task of borrows the pooled
    spread of all drawn tasks (its own cannot be estimated). Every stratum of the suite
    must be represented: a stratum with no task drawn has no estimate to weight.
    """
    y = as_1d_float(scores, "scores")
    v = _within(y, within_var)
    labels = [str(s) for s in np.asarray(strata, dtype=object).tolist()]
    if len(labels) != y.size:
        raise ValueError("strata must have one label per score")
    N = sum(population.values())
    missing = sorted(set(population) - set(labels))
    if missing:
        raise ValueError(f"no task drawn from stratum {missing[0]!r}")
    unknown = sorted(set(labels) - set(population))
    if unknown:
        raise ValueError(f"stratum {unknown[0]!r} is not in the suite")
    pooled = float(np.var(y, ddof=1)) if y.size > 1 else 0.0
    arr = np.array(labels, dtype=object)
    est = var = 0.0
    for name, n_pop in population.items():
        ys, vs = y[arr == name], v[arr == name]
        w = n_pop / N
        f = ys.size / n_pop
        if ys.size > n_pop:
            raise ValueError(f"stratum {name!r}: {ys.size} tasks drawn of {n_pop}")
        spread = float(np.var(ys, ddof=1)) if ys.size > 1 else pooled
        est += w * float(ys.mean())
        var += w * w * ((1.0 - f) * spread / ys.size + f * float(vs.mean()) / ys.size)
    se, lo, hi = _interval(est, var, confidence)
    return SubsetEstimate(est, se, lo, hi, y.size, N, "stratified", y.size, N, confidence)


def task_means(scores: object, tasks: object) -> tuple[list[object], np.ndarray, np.ndarray]:
    """Per task: its mean score over its trials and that mean's variance over trials.

    The within variance is s²_i/m_i with s²_i the trials' spread (ddof = 1); NaN for a task
    with one trial (unknown). Returns (task labels, means, within variances), tasks sorted.
    """
    s = as_1d_float(scores, "scores")
    names, codes = encode_labels(tasks)
    if codes.shape != s.shape:
        raise ValueError("tasks must have one label per score")
    m = np.bincount(codes).astype(float)
    sums = np.bincount(codes, weights=s)
    means = sums / m
    sq = np.bincount(codes, weights=(s - means[codes]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(m > 1, sq / (m - 1) / m, np.nan)
    return list(names), means, within
