"""Model-free bounds on pass^k (and pass@k) beyond the trials run.

With t trials per task the per-task pass counts identify the first t moments of the task-rate
distribution G, m_j = E[p^j] (j ≤ t), and nothing more: pass^k = m_k for k > t is only pinned
to the range of m_k over every G on [0, 1] whose first t moments are those (the moment
problem). No check on the counts can tell a Beta from another shape with the same t moments
(at 4 trials and 200 tasks the G² check of the beta-binomial flags a planted always- and
never-pass mixture in under 20% of runs), so this range is what the data support whatever
the shape.

The bound: the unbiased estimates m̂_j = mean over tasks of C(c, j)/C(n, j) (j = 1..d, d =
min(trials, ``MAX_MOMENTS``)) with their covariance Σ̂ over tasks (or clusters); the
confidence region {m : (m − m̂)ᵀ Σ̂⁻¹ (m − m̂) ≤ χ²_d(confidence)}; and the lowest and highest
m_k of any G (discretized on ``GRID`` points, dense near 0 and 1) whose moments lie in it,
each a linear program solved by tangent cuts of the ellipsoid. The true G's moments lie in
the region with the stated confidence, so its pass^k lies in the bound at least as often,
whatever the shape of the task rates: a projection, conservative (more so inside the
identified range than at its edges). The profile cut-off χ²₁ is narrower but misses when the
counts sit near the edge of the moment space, where the range collapses (a seeded always- and
never-pass sample at 200 tasks: [0.308, 0.351] for a true 0.211). When no distribution's
moments lie in the region (counts far from every mixture of binomials: under 5% of samples
if the normal approximation holds, e.g. 13/47/21/57/62 tasks at 0..4 of 4 from logit-normal
rates) it is enlarged 1.5-fold until one does (``scale``); counts less spread than binomial
noise allows meet none at any size and give NaN. Assumes tasks (clusters)
independent and enough of them for m̂ to be near normal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats._util import encode_labels

MAX_MOMENTS = 6
"""Moments used: beyond 6 trials the range is already narrow, and Σ̂ of many near-collinear
moments is ill-conditioned."""
GRID = 241
TOL = 1e-3
"""How far outside the region (in its own radii) the last cut may leave the solution."""
MAX_CUTS = 200
ENLARGE_STEPS = 6
"""Times the region is enlarged 1.5-fold when no distribution's moments lie in it."""


@dataclass(frozen=True)
class Bounds:
    """The lowest and highest pass^k (or pass@k) per k consistent with the counts (NaN when
    no task-rate distribution is: counts less spread than binomial noise allows)."""

    ks: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    moments: int
    """How many moments of the task-rate distribution the counts pinned (d)."""
    confidence: float
    scale: float = 1.0
    """How far the region was enlarged to meet the moments of some distribution (1: not)."""


def moment_estimates(
    c: np.ndarray, n: np.ndarray, d: int, clusters: object | None
) -> tuple[np.ndarray, np.ndarray]:
    """(m̂_1..m̂_d, their covariance): per-task unbiased pass^j averaged, the covariance of
    the mean from task (or cluster) sums, with the G/(G − 1) small-sample factor."""
    from scipy.special import comb

    j = np.arange(1, d + 1, dtype=float)
    u = comb(c[:, None], j[None, :]) / comb(n[:, None], j[None, :])
    m = u.mean(axis=0)
    codes = np.arange(c.size) if clusters is None else encode_labels(clusters)[1]
    if codes.size != c.size:
        raise ValueError("clusters must have one label per task")
    groups = int(codes.max()) + 1
    sums = np.zeros((groups, d))
    np.add.at(sums, codes, u - m)
    cov = sums.T @ sums / c.size**2 * groups / max(groups - 1, 1)
    return m, cov


def _extreme(f: np.ndarray, a: np.ndarray, b: np.ndarray, sign: float) -> float:
    """max (sign 1) or min (sign −1) of f·w over the simplex with |a w − b| ≤ 1: tangent
    cuts of the unit ball added where the last solution left it (Kelley's cutting planes),
    until it lies within ``TOL`` of the ball."""
    from scipy.optimize import linprog

    d = a.shape[0]
    cuts = list(np.vstack([np.eye(d), -np.eye(d)]))
    best = np.nan
    for _ in range(MAX_CUTS):
        u = np.array(cuts)
        res = linprog(
            -sign * f,
            A_ub=u @ a,
            b_ub=1.0 + u @ b,
            A_eq=np.ones((1, f.size)),
            b_eq=[1.0],
            bounds=(0, None),
            method="highs",
        )
        if res.status != 0:
            return np.nan
        best = float(f @ res.x)
        y = a @ res.x - b
        r = float(np.linalg.norm(y))
        if r <= 1.0 + TOL:
            break
        cuts.append(y / r)
    return best


def passk_bounds(
    c: object,
    n: object,
    ks: object,
    *,
    confidence: float = 0.95,
    clusters: object | None = None,
    metric: str = "pass_hat",
) -> Bounds:
    """The range of pass^k (``metric='pass_hat'``) or pass@k (``'pass_at'``) at each k over
    every task-rate distribution consistent with the counts (module docstring)."""
    from scipy.stats import chi2

    cc = np.asarray(c, dtype=float).reshape(-1)
    nn = np.broadcast_to(np.asarray(n, dtype=float), cc.shape).astype(float)
    k = np.atleast_1d(np.asarray(ks, dtype=float))
    d = int(min(nn.min(), MAX_MOMENTS))
    if d < 1:
        raise ValueError("every task needs at least one trial")
    m, cov = moment_estimates(cc, nn, d, clusters)
    vals, vecs = np.linalg.eigh(cov)
    floor = 1e-12 + 1e-9 * max(float(vals.max()), 0.0)
    half = np.sqrt(np.maximum(vals, floor) * chi2.ppf(confidence, d))
    # the region in whitened coordinates y = (Vᵀ(m − m̂))/half: the unit ball
    grid = (1 - np.cos(np.linspace(0.0, np.pi, GRID))) / 2
    powers = grid[None, :] ** np.arange(1, d + 1)[:, None]
    a = (vecs.T @ powers) / half[:, None]
    b = (vecs.T @ m) / half
    if metric not in ("pass_hat", "pass_at"):
        raise ValueError("metric must be 'pass_hat' or 'pass_at'")
    lo, hi = np.full(k.size, np.nan), np.full(k.size, np.nan)
    scale = 1.0
    for i, kk in enumerate(k):
        f = grid**kk if metric == "pass_hat" else 1 - (1 - grid) ** kk
        for _ in range(ENLARGE_STEPS):  # an empty region: counts far from every mixture
            lo[i] = _extreme(f, a / scale, b / scale, -1.0)
            hi[i] = _extreme(f, a / scale, b / scale, 1.0)
            if np.isfinite(lo[i]) and np.isfinite(hi[i]):
                break
            scale *= 1.5
    return Bounds(k, lo, hi, d, confidence, scale)
