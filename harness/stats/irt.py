"""Item response theory (2PL) for anchor sets: fit tasks from history, score a new system.

The two-parameter logistic model says a system of ability θ solves task i with chance
P_i(θ) = 1 / (1 + exp(−a_i (θ − b_i))): b_i the task's difficulty, a_i its discrimination
(metrics guide). Fitted once from many past systems' runs, it lets a new system run only a
few well-chosen anchor tasks: its θ is the one that best explains the anchors' results,
and its predicted full-suite score is the mean of P_i(θ) over every task of the suite.

The fit is marginal maximum a posteriori by EM over a Gauss–Hermite grid of abilities
(Bock & Aitkin 1981, Psychometrika 46: 443–459), systems' abilities N(0, 1) (which fixes
the scale), priors log a ~ N(0, 0.5²) and b ~ N(0, 2²) on each task, so a task every system
passes (or fails) gets a finite, prior-held place instead of an infinite one; such tasks
are flagged as not placed. Per-task standard errors come from the cross-product of the
systems' score contributions plus the prior's precision. Outcomes are binomial counts
(successes of trials per system and task), so repeated trials count as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats._util import z_two_sided

LOG_A_SD = 0.5
"""SD of log a's normal prior (mean 0: a = 1; 95% of the prior between 0.38 and 2.7)."""
B_SD = 2.0
"""SD of b's normal prior (mean 0: the fitted systems' mean ability)."""
NODES = 41


def p2pl(theta: object, a: object, b: object) -> np.ndarray:
    """P(solve) under 2PL, broadcasting θ against the tasks' a and b."""
    z = np.asarray(a, dtype=float) * (np.asarray(theta, dtype=float) - np.asarray(b, dtype=float))
    out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -35.0, 35.0)))
    return out


@dataclass(frozen=True)
class TwoPLFit:
    """Fitted tasks (one entry per column of the data) and the fitted systems' abilities."""

    a: np.ndarray
    b: np.ndarray
    se_a: np.ndarray
    se_b: np.ndarray
    unplaced: dict[int, str]
    """Task column → why the data could not place it (no trials, all passed, all failed)."""
    theta: np.ndarray
    """Each system's posterior mean ability (EAP)."""
    theta_sd: np.ndarray
    iterations: int
    converged: bool
    loglik: float
    """Marginal log-likelihood of the data at the fit."""


def _check_counts(successes: object, trials: object) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(successes, dtype=float)
    m = np.asarray(trials, dtype=float)
    if s.ndim != 2 or s.shape != m.shape:
        raise ValueError("successes and trials must be matrices of one shape (systems × tasks)")
    if np.any(m < 0) or np.any(s < 0) or np.any(s > m):
        raise ValueError("need 0 <= successes <= trials")
    return s, m


def _nodes() -> tuple[np.ndarray, np.ndarray]:
    q, w = np.polynomial.hermite_e.hermegauss(NODES)
    return q, np.log(w / w.sum())


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x @ y without BLAS: its threads spin against each other on a loaded machine (an EM
    step here took 0.2 s under load through BLAS, 0.01 s without), and these are small."""
    out: np.ndarray = np.einsum("ij,jk->ik", x, y, optimize=False)
    return out


def _posterior(
    s: np.ndarray, m: np.ndarray, p: np.ndarray, logw: np.ndarray
) -> tuple[np.ndarray, float]:
    """Each system's posterior over the ability nodes, and the marginal log-likelihood."""
    ll = _dot(s, np.log(p).T) + _dot(m - s, np.log1p(-p).T) + logw
    top = ll.max(axis=1, keepdims=True)
    post = np.exp(ll - top)
    norm = post.sum(axis=1, keepdims=True)
    return post / norm, float((top + np.log(norm)).sum())


def _m_step(
    a: np.ndarray, b: np.ndarray, q: np.ndarray, r: np.ndarray, n: np.ndarray, steps: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """Fisher-scoring steps per task on its expected complete-data log posterior, in
    (log a, b): the expected information is positive definite, so every step is uphill."""
    alpha = np.log(a)
    for _ in range(steps):
        a = np.exp(alpha)
        dist = q[:, None] - b
        p = 1.0 / (1.0 + np.exp(-np.clip(a * dist, -35.0, 35.0)))
        resid = r - n * p
        wgt = n * p * (1.0 - p)
        d_alpha, d_b = a * dist, -a  # ∂ logit / ∂ log a, ∂ logit / ∂ b
        g_al = (resid * d_alpha).sum(0) - alpha / LOG_A_SD**2
        g_b = (resid * d_b).sum(0) - b / B_SD**2
        h_aa = (wgt * d_alpha * d_alpha).sum(0) + 1.0 / LOG_A_SD**2
        h_ab = (wgt * d_alpha * d_b).sum(0)
        h_bb = (wgt * d_b * d_b).sum(0) + 1.0 / B_SD**2
        det = h_aa * h_bb - h_ab * h_ab
        step_al = (h_bb * g_al - h_ab * g_b) / det
        step_b = (h_aa * g_b - h_ab * g_al) / det
        alpha = alpha + np.clip(step_al, -0.5, 0.5)
        b = b + np.clip(step_b, -1.0, 1.0)
    return np.exp(alpha), b


def fit_2pl(successes: object, trials: object, max_iter: int = 500, tol: float = 1e-4) -> TwoPLFit:
    """Fit 2PL to a systems × tasks matrix of successes out of trials (0 trials: not run)."""
    s, m = _check_counts(successes, trials)
    q, logw = _nodes()
    n_tasks = s.shape[1]
    a = np.ones(n_tasks)
    rate = (s.sum(0) + 0.5) / (m.sum(0) + 1.0)
    b = -np.log(rate / (1.0 - rate))
    converged, iterations = False, 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        post, _ = _posterior(s, m, p2pl(q[:, None], a, b), logw)
        new_a, new_b = _m_step(a, b, q, _dot(post.T, s), _dot(post.T, m))
        change = max(float(np.abs(np.log(new_a / a)).max()), float(np.abs(new_b - b).max()))
        a, b = new_a, new_b
        if change < tol:
            converged = True
            break
    p = p2pl(q[:, None], a, b)
    post, loglik = _posterior(s, m, p, logw)
    se_a, se_b = _task_se(s, m, post, q, p, a, b)
    theta = post @ q
    theta_sd = np.sqrt(np.maximum(post @ (q * q) - theta**2, 0.0))
    return TwoPLFit(
        a, b, se_a, se_b, _unplaced(s, m), theta, theta_sd, iterations, converged, loglik
    )


def _task_se(
    s: np.ndarray,
    m: np.ndarray,
    post: np.ndarray,
    q: np.ndarray,
    p: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """SEs of a and b from the cross-product of per-system scores (in log a and b) plus the
    prior's precision; a's by the delta method."""
    mean_q = post @ q
    g_b = -a * (s - m * (post @ p))
    g_al = a * (s * (mean_q[:, None] - b) - m * ((post * q) @ p - b * (post @ p)))
    i_aa = (g_al * g_al).sum(0) + 1.0 / LOG_A_SD**2
    i_ab = (g_al * g_b).sum(0)
    i_bb = (g_b * g_b).sum(0) + 1.0 / B_SD**2
    det = i_aa * i_bb - i_ab * i_ab
    return a * np.sqrt(i_bb / det), np.sqrt(i_aa / det)


def _unplaced(s: np.ndarray, m: np.ndarray) -> dict[int, str]:
    out: dict[int, str] = {}
    ran, won = m.sum(0), s.sum(0)
    for i in range(s.shape[1]):
        if ran[i] == 0:
            out[i] = "no trials in the fitted runs"
        elif won[i] == ran[i]:
            out[i] = "every fitted trial passed"
        elif won[i] == 0:
            out[i] = "every fitted trial failed"
    return out


@dataclass(frozen=True)
class Ability:
    """A system's ability from its anchor results."""

    theta: float
    se: float
    method: str
    """'mle' (maximum likelihood) or 'map' (all anchors passed or all failed: the prior
    N(0, 1) of the fitted systems holds it finite)."""


def ability(successes: object, trials: object, a: object, b: object) -> Ability:
    """θ that best explains the anchors' results, SE 1/sqrt(Fisher information) there.

    Fisher information Σ_i m_i a_i² P_i(1 − P_i) (metrics guide). Maximum likelihood unless
    every anchor trial passed or every one failed, where no finite maximum exists and the
    fit's ability prior N(0, 1) is added (maximum a posteriori).
    """
    s = np.asarray(successes, dtype=float)
    m = np.asarray(trials, dtype=float)
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not (s.shape == m.shape == av.shape == bv.shape) or s.ndim != 1:
        raise ValueError("successes, trials, a and b need one entry per anchor task")
    if m.sum() <= 0:
        raise ValueError("no anchor trials")
    perfect = s.sum() in (0.0, m.sum())
    prior = 1.0 if perfect else 0.0
    theta = 0.0
    for _ in range(100):
        p = p2pl(theta, av, bv)
        grad = float(av @ (s - m * p)) - prior * theta
        info = float((m * av * av) @ (p * (1 - p))) + prior
        step = max(min(grad / info, 1.0), -1.0)
        theta += step
        if abs(step) < 1e-10:
            break
    p = p2pl(theta, av, bv)
    info = float((m * av * av) @ (p * (1 - p))) + prior
    return Ability(theta, 1.0 / math.sqrt(info), "map" if perfect else "mle")


@dataclass(frozen=True)
class PredictedScore:
    """A model-based full-suite score: the mean of P_i(θ) over every task of the suite."""

    estimate: float
    lo: float
    hi: float
    theta: float
    theta_se: float
    confidence: float


def predicted_score(est: Ability, a: object, b: object, confidence: float = 0.95) -> PredictedScore:
    """Full-suite score at θ, its interval the scores at θ ± z·SE (metrics guide).

    Counts only θ's uncertainty, not the fitted tasks' (their SEs are in the fit).
    """
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    z = z_two_sided(confidence)
    ends = sorted(
        float(p2pl(t, av, bv).mean()) for t in (est.theta - z * est.se, est.theta + z * est.se)
    )
    score = float(p2pl(est.theta, av, bv).mean())
    return PredictedScore(score, ends[0], ends[1], est.theta, est.se, confidence)


def information(a: object, b: object, thetas: object) -> np.ndarray:
    """Each task's Fisher information a²P(1 − P), averaged over the abilities ``thetas``."""
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    t = np.asarray(thetas, dtype=float).reshape(-1, 1)
    p = p2pl(t, av, bv)
    out: np.ndarray = (av * av * p * (1 - p)).mean(axis=0)
    return out


def most_informative(a: object, b: object, thetas: object, n: int) -> np.ndarray:
    """The n task columns with the most information at the abilities seen (ties by index)."""
    info = information(a, b, thetas)
    if not 0 < n <= info.size:
        raise ValueError(f"need 0 < n <= {info.size} tasks")
    return np.sort(np.argsort(-info, kind="stable")[:n])


def midrange(
    pass_rates: object, n: int, band: tuple[float, float], rank: object | None = None
) -> np.ndarray:
    """n task columns whose historical pass rate lies in ``band`` (inclusive), the highest
    ``rank`` first (default: nearest 50%); fewer if the band holds fewer."""
    r = np.asarray(pass_rates, dtype=float)
    lo, hi = band
    inside = np.flatnonzero((r >= lo) & (r <= hi))
    key = -np.abs(r[inside] - 0.5) if rank is None else np.asarray(rank, dtype=float)[inside]
    return np.sort(inside[np.argsort(-key, kind="stable")[:n]])
