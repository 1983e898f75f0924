"""Cluster bootstrap: percentile and BCa intervals that resample the independent unit.

Resampling C clusters with replacement is the same as giving every cluster a multiplicity
(how many times it was drawn; the multiplicities of one resample sum to C) and every task
its cluster's multiplicity. A mean of per-task values is then a ratio of two cluster-level
sums, so one resample costs a dot product over clusters, never a pass over tasks:

    mean*_b = Σ_c m_bc · S_c / Σ_c m_bc · W_c,   S_c = Σ_{i∈c} w_i x_i,  W_c = Σ_{i∈c} w_i

(metrics guide: "resample the independent unit ... if questions are clustered, resample clusters";
when-not-to-ship guide: carry each task's baseline and candidate records together). The same seed and the
same number of clusters always give the same multiplicities, so two calls (or two arms in
``paired_cluster_bootstrap``) resample identical clusters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.stats._util import RngLike, as_rng, encode_labels, z_quantile

# Upper bound on the number of entries of one multiplicity batch (rows × clusters or
# rows × tasks), which bounds peak memory at a few tens of megabytes.
_BATCH_ENTRIES = 2_000_000

VectorizedStatistic = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""statistic(data, multiplicity) -> values: data has one row per task; multiplicity has shape
(batch, n_tasks) with each task's resampled count; returns one value per batch row."""


@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap estimate with its interval."""

    estimate: float
    """The statistic on the observed data."""
    ci: tuple[float, float]
    """(lo, hi) interval by ``method``."""
    se: float
    """Standard deviation of the bootstrap replicates."""
    method: str
    """'percentile' or 'bca'."""
    confidence: float
    n_resamples: int
    n_clusters: int
    replicates: np.ndarray
    """The n_resamples bootstrap values of the statistic."""


@dataclass(frozen=True)
class PairedBootstrapResult:
    """Two arms resampled on the same clusters, and their difference (candidate − baseline)."""

    difference: BootstrapResult
    baseline: BootstrapResult
    candidate: BootstrapResult


def cluster_resample_counts(
    n_clusters: int, n_resamples: int, rng: RngLike = None, batch_rows: int | None = None
) -> Iterator[np.ndarray]:
    """Yield batches of cluster multiplicities, shape (rows, n_clusters), int64.

    Each row is one bootstrap resample: C draws with replacement from C clusters, counted per
    cluster (a multinomial(C, 1/C) vector). Batches concatenate to n_resamples rows; the draws
    do not depend on the batch size, so a seed fixes the resamples.
    """
    if n_clusters < 1 or n_resamples < 1:
        raise ValueError("need at least one cluster and one resample")
    gen = as_rng(rng)
    rows = batch_rows or max(1, _BATCH_ENTRIES // n_clusters)
    done = 0
    while done < n_resamples:
        b = min(rows, n_resamples - done)
        draws = gen.integers(0, n_clusters, size=(b, n_clusters))
        draws += (np.arange(b) * n_clusters)[:, None]
        yield np.bincount(draws.ravel(), minlength=b * n_clusters).reshape(b, n_clusters)
        done += b


def percentile_interval(replicates: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile interval: the (1 − confidence)/2 and (1 + confidence)/2 quantiles."""
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(np.asarray(replicates, dtype=float), [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bca_interval(
    replicates: np.ndarray, estimate: float, jackknife: np.ndarray, confidence: float = 0.95
) -> tuple[float, float]:
    """Bias-corrected and accelerated interval (Efron & Tibshirani 1993, ch. 14).

    z0 = Φ⁻¹(share of replicates below the estimate, ties counted half) as in scipy;
    acceleration a = Σ(θ̄ − θ_(i))³ / (6 (Σ(θ̄ − θ_(i))²)^{3/2}) over the leave-one-unit-out
    (here leave-one-cluster-out) estimates θ_(i). The adjusted levels are clipped to
    [1/2B, 1 − 1/2B] so that an extreme z0 cannot produce an undefined interval.
    """
    from statistics import NormalDist

    reps = np.asarray(replicates, dtype=float)
    b = reps.size
    share = float(np.count_nonzero(reps < estimate) + np.count_nonzero(reps <= estimate)) / (
        2.0 * b
    )
    share = min(max(share, 1.0 / (2 * b)), 1.0 - 1.0 / (2 * b))
    z0 = z_quantile(share)
    jk = np.asarray(jackknife, dtype=float)
    dev = jk.mean() - jk
    den = float(np.sum(dev**2))
    accel = float(np.sum(dev**3)) / (6.0 * den**1.5) if den > 0 else 0.0
    alpha = (1.0 - confidence) / 2.0
    std = NormalDist()
    levels = []
    for z_a in (z_quantile(alpha), z_quantile(1.0 - alpha)):
        num = z0 + z_a
        level = std.cdf(z0 + num / (1.0 - accel * num))
        levels.append(min(max(level, 1.0 / (2 * b)), 1.0 - 1.0 / (2 * b)))
    lo, hi = np.quantile(reps, levels)
    return float(lo), float(hi)


def _cluster_codes(clusters: object | None, n_tasks: int) -> np.ndarray:
    if clusters is None:
        return np.arange(n_tasks, dtype=np.intp)
    _, codes = encode_labels(clusters)
    if codes.size != n_tasks:
        raise ValueError("clusters must have one label per task")
    return codes


def _task_weights(weights: object | None, n_tasks: int) -> np.ndarray:
    if weights is None:
        return np.ones(n_tasks)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n_tasks,) or np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
        raise ValueError("weights must be one non-negative finite value per task, sum > 0")
    return w


def bootstrap_ratio_replicates(
    numerators: np.ndarray,
    denominator: np.ndarray,
    n_resamples: int,
    rng: RngLike = None,
) -> np.ndarray:
    """Replicates of Σ_c m_c N_c / Σ_c m_c D_c for cluster-level sums; shape (B, k).

    ``numerators`` has shape (C, k) (k statistics sharing one denominator, e.g. the arms of a
    comparison), ``denominator`` shape (C,). The building block of the fast path.
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominator, dtype=float)
    if num.ndim == 1:
        num = num[:, None]
    both = np.column_stack([num, den])
    out = np.empty((n_resamples, num.shape[1]))
    row = 0
    for counts in cluster_resample_counts(den.size, n_resamples, rng):
        sums = counts @ both
        with np.errstate(divide="ignore", invalid="ignore"):
            out[row : row + counts.shape[0]] = sums[:, :-1] / sums[:, -1:]
        row += counts.shape[0]
    return out


def _ratio_jackknife(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Leave-one-cluster-out ratios of sums; shape (C, k)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = (num.sum(axis=0) - num) / (den.sum() - den)[:, None]
    return out


def _summarize(
    estimate: float,
    reps: np.ndarray,
    jackknife: np.ndarray | None,
    method: str,
    confidence: float,
    n_clusters: int,
) -> BootstrapResult:
    if not np.all(np.isfinite(reps)):
        raise ValueError("some bootstrap replicates are undefined (zero total weight?)")
    if method == "percentile":
        ci = percentile_interval(reps, confidence)
    elif method == "bca":
        if jackknife is None:  # pragma: no cover - internal contract
            raise ValueError("BCa needs jackknife values")
        ci = bca_interval(reps, estimate, jackknife, confidence)
    else:
        raise ValueError("method must be 'percentile' or 'bca'")
    return BootstrapResult(
        estimate=float(estimate),
        ci=ci,
        se=float(np.std(reps, ddof=1)) if reps.size > 1 else 0.0,
        method=method,
        confidence=confidence,
        n_resamples=int(reps.size),
        n_clusters=n_clusters,
        replicates=reps,
    )


def _callable_replicates(
    data: np.ndarray,
    codes: np.ndarray,
    n_clusters: int,
    statistic: Callable[..., Any],
    vectorized: bool,
    n_resamples: int,
    rng: RngLike,
) -> np.ndarray:
    n_tasks = codes.size
    out = np.empty(n_resamples)
    row = 0
    rows = max(1, _BATCH_ENTRIES // max(n_tasks, n_clusters))
    for counts in cluster_resample_counts(n_clusters, n_resamples, rng, batch_rows=rows):
        mult = counts[:, codes]
        if vectorized:
            vals = np.asarray(statistic(data, mult), dtype=float).reshape(-1)
            if vals.size != counts.shape[0]:
                raise ValueError("a vectorized statistic must return one value per row")
        else:
            vals = np.array([float(statistic(np.repeat(data, m, axis=0))) for m in mult])
        out[row : row + counts.shape[0]] = vals
        row += counts.shape[0]
    return out


def _callable_jackknife(
    data: np.ndarray,
    codes: np.ndarray,
    n_clusters: int,
    statistic: Callable[..., Any],
    vectorized: bool,
) -> np.ndarray:
    if not vectorized:
        return np.array([float(statistic(data[codes != c])) for c in range(n_clusters)])
    out = np.empty(n_clusters)
    rows = max(1, _BATCH_ENTRIES // codes.size)
    for start in range(0, n_clusters, rows):
        held = np.arange(start, min(start + rows, n_clusters))
        mult = (codes[None, :] != held[:, None]).astype(float)
        out[held] = np.asarray(statistic(data, mult), dtype=float).reshape(-1)
    return out


# long: input checks, the resampling and the interval method share the same validated arrays.
def cluster_bootstrap_ci(
    data: object,
    clusters: object | None = None,
    statistic: str | Callable[..., Any] = "mean",
    *,
    weights: object | None = None,
    confidence: float = 0.95,
    method: str = "percentile",
    n_resamples: int = 10_000,
    rng: RngLike = None,
    vectorized: bool = True,
) -> BootstrapResult:
    """Bootstrap interval for a statistic of per-task data, resampling whole clusters.

    Estimand: whatever ``statistic`` estimates over the population of clusters (metrics guide:
    bootstrap for any statistic; resample the independent unit; when-not-to-ship guide: match the interval
    to the sampling unit). Each resample draws C clusters with replacement and carries all
    their tasks (and, through per-task values, all their trials).

    Args:
        data: one row per task. For ``"mean"``, a 1-D array of per-task values (rates, pass^k,
            scores). For ``"ratio"``, shape (n_tasks, 2): numerator and denominator per task
            (e.g. successes and trials for the pooled trial rate). For a callable, any array
            with one row per task.
        clusters: the cluster label of each task; ``None`` makes each task its own cluster
            (the ordinary task bootstrap).
        statistic: ``"mean"`` (weighted mean, the fast ratio-of-sums path), ``"ratio"``, or a
            callable. With ``vectorized=True`` it is called ``statistic(data, multiplicity)``
            with ``multiplicity`` of shape (batch, n_tasks) (each task's resampled count, or
            0/1 leave-one-cluster-out masks for BCa) and must return one value per row. With
            ``vectorized=False`` it is called on the resampled rows (``np.repeat``) and returns
            a float: general but slow.
        weights: per-task weights for ``"mean"`` (e.g. stratum weights); default equal.
        confidence: two-sided level.
        method: ``"percentile"`` or ``"bca"`` (acceleration from the leave-one-cluster-out
            jackknife).
        n_resamples: bootstrap resamples B.
        rng: seed or Generator; the same seed and cluster count give the same resamples.
        vectorized: see ``statistic``.

    Assumes clusters are independent draws from their population and reasonably many; with
    a handful of clusters bootstrap intervals are too narrow (when-not-to-ship guide) and should be
    reported as such.
    """
    arr = np.asarray(data, dtype=float)
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise ValueError("data must have one row per task")
    if not np.all(np.isfinite(arr)):
        raise ValueError("data contain NaN or infinite values")
    n_tasks = arr.shape[0]
    codes = _cluster_codes(clusters, n_tasks)
    n_clusters = int(codes.max()) + 1
    need_jk = method == "bca"
    if statistic == "mean" or statistic == "ratio":
        if statistic == "mean":
            if arr.ndim != 1:
                raise ValueError("'mean' takes a 1-D array of per-task values")
            w = _task_weights(weights, n_tasks)
            num_task, den_task = w * arr, w
        else:
            if arr.ndim != 2 or arr.shape[1] != 2:
                raise ValueError("'ratio' takes an (n_tasks, 2) array: numerator, denominator")
            if weights is not None:
                raise ValueError("weights are not used with 'ratio'")
            num_task, den_task = arr[:, 0], arr[:, 1]
        num_c = np.bincount(codes, weights=num_task, minlength=n_clusters)
        den_c = np.bincount(codes, weights=den_task, minlength=n_clusters)
        estimate = float(num_c.sum() / den_c.sum())
        reps = bootstrap_ratio_replicates(num_c, den_c, n_resamples, rng)[:, 0]
        jk = _ratio_jackknife(num_c[:, None], den_c)[:, 0] if need_jk else None
    elif callable(statistic):
        if weights is not None:
            raise ValueError("pass weights inside a callable statistic")
        if vectorized:
            estimate = float(np.asarray(statistic(arr, np.ones((1, n_tasks)))).reshape(-1)[0])
        else:
            estimate = float(statistic(arr))
        reps = _callable_replicates(arr, codes, n_clusters, statistic, vectorized, n_resamples, rng)
        jk = _callable_jackknife(arr, codes, n_clusters, statistic, vectorized) if need_jk else None
    else:
        raise ValueError("statistic must be 'mean', 'ratio' or a callable")
    return _summarize(estimate, reps, jk, method, confidence, n_clusters)


def paired_cluster_bootstrap(
    baseline: object,
    candidate: object,
    clusters: object | None = None,
    *,
    weights: object | None = None,
    confidence: float = 0.95,
    method: str = "percentile",
    n_resamples: int = 10_000,
    rng: RngLike = None,
) -> PairedBootstrapResult:
    """Paired cluster bootstrap of two arms' mean per-task scores and their difference.

    Estimand: mean(candidate) − mean(baseline) over the cluster population, with task weights
    (when-not-to-ship guide: subtract per task, aggregate with the declared weights, resample the
    independent unit carrying both arms' records together; metrics guide: paired bootstrap).
    ``baseline`` and ``candidate`` are per-task values aligned on the same tasks (e.g. per-task
    success rates of each arm). Every resample applies the same cluster multiplicities to both
    arms, so task difficulty cancels. Returns intervals for each arm and for the difference.
    """
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError("baseline and candidate must be 1-D and aligned on the same tasks")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("scores contain NaN or infinite values")
    codes = _cluster_codes(clusters, a.size)
    n_clusters = int(codes.max()) + 1
    w = _task_weights(weights, a.size)
    num = np.column_stack(
        [
            np.bincount(codes, weights=w * a, minlength=n_clusters),
            np.bincount(codes, weights=w * b, minlength=n_clusters),
        ]
    )
    den = np.bincount(codes, weights=w, minlength=n_clusters)
    est = num.sum(axis=0) / den.sum()
    reps = bootstrap_ratio_replicates(num, den, n_resamples, rng)
    jk = _ratio_jackknife(num, den) if method == "bca" else None

    def one(col_est: float, col_reps: np.ndarray, col_jk: np.ndarray | None) -> BootstrapResult:
        return _summarize(col_est, col_reps, col_jk, method, confidence, n_clusters)

    return PairedBootstrapResult(
        difference=one(
            float(est[1] - est[0]),
            reps[:, 1] - reps[:, 0],
            None if jk is None else jk[:, 1] - jk[:, 0],
        ),
        baseline=one(float(est[0]), reps[:, 0], None if jk is None else jk[:, 0]),
        candidate=one(float(est[1]), reps[:, 1], None if jk is None else jk[:, 1]),
    )
