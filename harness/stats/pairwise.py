"""Pairwise judging: win rates, position bias and Bradley–Terry ratings on the Elo scale.

A pairwise judge sees two arms' outputs for the same task and trial seed and says which is
better; each pair is judged twice with the order swapped, and a pair whose two verdicts
disagree counts as a tie (metrics guide, "Win rate"; Zheng et al. 2023 on position bias).
With three or more arms one Bradley–Terry fit gives each arm one rating (metrics guide,
"Elo and Bradley-Terry"; Hunter 2004), with intervals from resampling whole clusters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats._util import RngLike, as_1d_float, encode_labels
from harness.stats.aggregate import per_task_rates, task_clusters
from harness.stats.bootstrap import cluster_resample_counts, percentile_interval
from harness.stats.estimate import Estimate, mean_estimate
from harness.stats.intervals import wilson_interval

ELO_SCALE = 400.0 / math.log(10.0)
"""Natural-log strength to Elo points: 400 points is 10-to-1 odds."""

ELO_ANCHOR = 1000.0
"""The mean rating."""


def swapped_outcome(first: str, second: str) -> float:
    """The score of arm A from one pair judged twice: ``first`` is the verdict with A shown
    first, ``second`` with B shown first; each is 'A', 'B' or 'tie' (arms, not positions).

    Both say A: 1; both say B: 0; anything else (a tie, or verdicts that disagree, as a
    judge that follows position gives): ½.
    """
    for verdict in (first, second):
        if verdict not in ("A", "B", "tie"):
            raise ValueError(f"a pairwise verdict is 'A', 'B' or 'tie', got {verdict!r}")
    if first == second == "A":
        return 1.0
    if first == second == "B":
        return 0.0
    return 0.5


@dataclass(frozen=True)
class PositionBias:
    """How often a judge's verdict followed the position instead of the content."""

    rate: float
    lo: float
    hi: float
    n: int
    """Pairs judged in both orders."""
    biased: int
    """Pairs where the judge picked the same position both times."""


def position_bias(
    first: object, second: object, confidence: float = 0.95, clusters: object | None = None
) -> PositionBias:
    """Share of pairs whose two verdicts picked the same position (A first then B first: A
    then B, or B then A), with its interval: over clusters (``clusters``: each pair's; the
    pairs of one cluster show the judge related prompts, so they are not independent) as every
    rate gets it (``mean_estimate``: CR2 on the logit scale), or Wilson over pairs without.

    Estimand: the probability that swapping the order flips the judge's verdict (Zheng et
    al. 2023).
    """
    a, b = np.asarray(first), np.asarray(second)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("first and second must be 1-D arrays of one length")
    flipped = ((a == "A") & (b == "B")) | ((a == "B") & (b == "A"))
    n, k = int(a.size), int(flipped.sum())
    if n and clusters is not None:
        est = mean_estimate(flipped.astype(float), clusters, confidence=confidence)
        lo, hi = est.lo, est.hi
    else:
        lo, hi = wilson_interval(k, n, confidence) if n else (0.0, 1.0)
    return PositionBias(rate=k / n if n else float("nan"), lo=lo, hi=hi, n=n, biased=k)


def _fit(i: np.ndarray, j: np.ndarray, s: np.ndarray, w: np.ndarray, m: int) -> np.ndarray | None:
    """Maximum-likelihood strengths β (natural log, mean 0) by Newton's method, or None when
    the maximum does not exist (an arm that won or lost every comparison it had, or arms
    with no comparison path between them)."""
    beta = np.zeros(m)
    ones = np.full((m, m), 1.0 / m)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(beta[i] - beta[j])))
        resid = w * (s - p)
        grad = np.bincount(i, resid, m) - np.bincount(j, resid, m)
        h = w * p * (1.0 - p)
        info = np.zeros((m, m))
        np.add.at(info, (i, i), h)
        np.add.at(info, (j, j), h)
        np.add.at(info, (i, j), -h)
        np.add.at(info, (j, i), -h)
        try:
            step = np.linalg.solve(info + ones, grad)
        except np.linalg.LinAlgError:
            return None
        beta = beta + step
        beta -= beta.mean()
        if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > 30.0:
            return None
        if np.max(np.abs(step)) < 1e-13:
            return beta
    return None


def _exists(i: np.ndarray, j: np.ndarray, s: np.ndarray, w: np.ndarray, m: int) -> bool:
    """The MLE exists when every arm has both a (part) win and a (part) loss and the
    comparison graph is connected (Zermelo 1929; Hunter 2004, assumption 1, checked here in
    its weaker per-arm form, the Newton iteration catching the rest)."""
    won = np.bincount(i, w * s, m) + np.bincount(j, w * (1 - s), m)
    lost = np.bincount(i, w * (1 - s), m) + np.bincount(j, w * s, m)
    return bool(np.all(won > 0) and np.all(lost > 0))


@dataclass(frozen=True)
class Ratings:
    """One Bradley–Terry rating per arm on the Elo scale, with cluster-bootstrap intervals."""

    arms: list[str]
    rating: list[float]
    lo: list[float]
    hi: list[float]
    n: int
    """Comparisons."""
    n_clusters: int
    resamples: int
    degenerate: int
    """Resamples where some arm won or lost everything: its rating there is the rating at
    the edge of the others' (±1000 points from the mean), so its interval stays open."""


def bradley_terry(
    first: object, second: object, score: object, weights: object | None = None
) -> dict[str, float]:
    """Bradley–Terry ratings on the Elo scale (mean ``ELO_ANCHOR``), by maximum likelihood.

    Estimand: the arm strengths under P(i beats j) = 1/(1 + 10^(−(R_i − R_j)/400)) (metrics
    guide; Bradley & Terry 1952; the Elo scale's 400 points per factor of 10 in odds).
    ``first``, ``second``: the two arms of each comparison; ``score``: the first arm's
    score (1 win, ½ tie, 0 loss; a tie is half a win each way). Fitted by Newton's method on
    the log-likelihood (a logistic regression on arm indicators, as LMArena fits it) to
    1e-13 in log strength. Raises ValueError when the maximum does not exist.
    """
    arms, i, j, s, w = _comparisons(first, second, score, weights)
    beta = _fit(i, j, s, w, len(arms)) if _exists(i, j, s, w, len(arms)) else None
    if beta is None:
        raise ValueError(
            "no Bradley–Terry fit: an arm won or lost every comparison it had, or some arms "
            "were never compared with the rest"
        )
    return {str(a): ELO_ANCHOR + ELO_SCALE * float(b) for a, b in zip(arms, beta, strict=True)}


def _comparisons(
    first: object, second: object, score: object, weights: object | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a, b = np.asarray(first), np.asarray(second)
    s = as_1d_float(score, "score")
    if a.shape != b.shape or a.shape != s.shape:
        raise ValueError("first, second and score must have one entry per comparison")
    if np.any((s < 0) | (s > 1)):
        raise ValueError("a comparison's score lies in [0, 1]")
    arms, codes = encode_labels(np.concatenate([a, b]))
    w = np.ones(s.size) if weights is None else as_1d_float(weights, "weights")
    return arms, codes[: a.size], codes[a.size :], s, w


def bradley_terry_ratings(
    first: object,
    second: object,
    score: object,
    clusters: object,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    rng: RngLike = 0,
) -> Ratings:
    """Ratings (``bradley_terry``) with percentile intervals from a cluster bootstrap.

    Each resample draws the clusters (the task's cluster of each comparison) with
    replacement and refits with every comparison weighted by its cluster's multiplicity
    (metrics guide, "Bootstrap": LMArena resamples battles and refits; here the resampled
    unit is the independent one). Seeded: the same data give the same intervals.
    """
    arms, i, j, s, _ = _comparisons(first, second, score, None)
    _, codes = encode_labels(np.asarray(clusters))
    if codes.size != s.size:
        raise ValueError("clusters must have one entry per comparison")
    point = bradley_terry(first, second, score)
    m, g = len(arms), int(codes.max()) + 1
    reps, degenerate = [], 0
    for batch in cluster_resample_counts(g, n_resamples, rng):
        for mult in batch:
            w = mult[codes].astype(float)
            beta = _fit(i, j, s, w, m) if _exists(i, j, s, w, m) else None
            if beta is None:
                degenerate += 1
                beta = _edge_strengths(i, j, s, w, m)
            reps.append(ELO_ANCHOR + ELO_SCALE * beta)
    arr = np.array(reps)
    bounds = [percentile_interval(arr[:, k], confidence) for k in range(m)]
    names = [str(a) for a in arms]
    return Ratings(
        arms=names,
        rating=[point[a] for a in names],
        lo=[min(b[0], point[a]) for b, a in zip(bounds, names, strict=True)],
        hi=[max(b[1], point[a]) for b, a in zip(bounds, names, strict=True)],
        n=int(s.size),
        n_clusters=g,
        resamples=n_resamples,
        degenerate=degenerate,
    )


def _edge_strengths(
    i: np.ndarray, j: np.ndarray, s: np.ndarray, w: np.ndarray, m: int
) -> np.ndarray:
    """A resample with no finite fit: refit with half a tie added to every pair of arms (a
    light prior pulling toward equal strength), then push arms that won (lost) everything
    to the edge, ``ELO_ANCHOR`` ± 1000 points."""
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m)]
    pi = np.concatenate([i, [p[0] for p in pairs]]).astype(np.intp)
    pj = np.concatenate([j, [p[1] for p in pairs]]).astype(np.intp)
    ps = np.concatenate([s, np.full(len(pairs), 0.5)])
    pw = np.concatenate([w, np.full(len(pairs), 0.5)])
    beta = _fit(pi, pj, ps, pw, m)
    beta = np.zeros(m) if beta is None else beta
    won = np.bincount(i, w * s, m) + np.bincount(j, w * (1 - s), m)
    lost = np.bincount(i, w * (1 - s), m) + np.bincount(j, w * s, m)
    edge = 1000.0 / ELO_SCALE
    beta = np.where((lost == 0) & (won > 0), edge, beta)
    return np.where((won == 0) & (lost > 0), -edge, beta)


def win_rate(
    scores: object, tasks: object, clusters: object | None = None, confidence: float = 0.95
) -> Estimate:
    """Win rate of A over B, (wins + ½ ties)/comparisons, with a clustered interval.

    Estimand: the expected score of A against B on a task drawn from the suite's population
    (metrics guide, "Win rate"). ``scores``: one per comparison (``swapped_outcome``);
    ``tasks``: each comparison's task; ``clusters``: each comparison's cluster (None: tasks
    are the units). The per-task mean score is the unit value, so the interval is the one
    every rate gets (``mean_estimate``: Wilson over tasks, or CR2 over clusters).
    """
    s = as_1d_float(scores, "scores")
    rates, _ = per_task_rates(tasks, s)
    if clusters is None:
        return mean_estimate(rates, confidence=confidence)
    _, per_task_cluster = task_clusters(tasks, clusters)
    return mean_estimate(rates, per_task_cluster, confidence=confidence)
