"""Cost as part of the result: Pareto fronts, mixtures and budget-matched retry baselines."""

from __future__ import annotations

import numpy as np

from harness.stats._util import as_1d_float


def _points(accuracy: object, cost: object) -> tuple[np.ndarray, np.ndarray]:
    acc = as_1d_float(accuracy, "accuracy")
    cst = as_1d_float(cost, "cost")
    if acc.shape != cst.shape:
        raise ValueError("accuracy and cost must have the same length")
    return acc, cst


def pareto_front(accuracy: object, cost: object) -> np.ndarray:
    """Indices of agents no other agent dominates, sorted by increasing cost.

    Agent j dominates i when acc_j >= acc_i and cost_j <= cost_i with one strict (agent-evaluation guide:
    70% for $6 dominates 68% for $15). Identical points are all kept.
    """
    acc, cst = _points(accuracy, cost)
    order = np.lexsort((-acc, cst))  # by cost, then best accuracy first
    keep: list[int] = []
    best = -np.inf
    best_cost = np.nan
    for i in order:
        if acc[i] > best:
            keep.append(int(i))
            best, best_cost = acc[i], cst[i]
        elif acc[i] == best and cst[i] == best_cost:
            keep.append(int(i))
    return np.asarray(keep, dtype=np.intp)


def upper_convex_hull(accuracy: object, cost: object, include_origin: bool = False) -> np.ndarray:
    """Indices of agents on the upper-left convex hull of (cost, accuracy), by increasing cost.

    Estimand: the best accuracy reachable at each budget when agents may be mixed at random
    per task; a mixture lies on the segment between its components (agent-evaluation guide; HAL draws
    hulls including the origin, ``include_origin=True``: the free "do nothing" agent at cost
    0 and accuracy 0). Points on the hull are Pareto-optimal and not beaten by any mixture.
    """
    acc, cst = _points(accuracy, cost)
    front = pareto_front(acc, cst)
    # Deduplicate identical points for the hull walk, keep the first index.
    pts: list[tuple[float, float, int]] = []
    for i in front:
        if pts and pts[-1][0] == cst[i] and pts[-1][1] == acc[i]:
            continue
        pts.append((float(cst[i]), float(acc[i]), int(i)))
    if include_origin:
        pts.insert(0, (0.0, 0.0, -1))
    hull: list[tuple[float, float, int]] = []
    for p in pts:
        while len(hull) >= 2:
            (x1, y1, _), (x2, y2, _) = hull[-2], hull[-1]
            # Drop the middle point unless it lies strictly above the chord to p.
            cross = (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1)
            if cross >= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    return np.asarray([i for _, _, i in hull if i >= 0], dtype=np.intp)


def mixture(
    accuracy_a: float, cost_a: float, accuracy_b: float, cost_b: float, share_b: float
) -> tuple[float, float]:
    """(accuracy, cost) of running agent b on a random share of tasks and a on the rest.

    Linearity of expectation (agent-evaluation guide): half of $0.03 at 55% and $1.50 at 66% gives
    60.5% at $0.765.
    """
    if not 0 <= share_b <= 1:
        raise ValueError("share_b must lie in [0, 1]")
    return (
        (1 - share_b) * accuracy_a + share_b * accuracy_b,
        (1 - share_b) * cost_a + share_b * cost_b,
    )


def retry_success(p: object, k: int) -> tuple[float, float]:
    """Success and expected tries of retrying up to k times, stopping at the first success.

    For one task with per-try success p (agent-evaluation guide): success 1 − (1 − p)^k and expected tries
    Σ_{i<k} (1 − p)^i = (1 − (1 − p)^k)/p (k when p = 0). With an array of per-task rates the
    two are averaged over tasks, which is the honest baseline: 1 − mean (1 − p_j)^k, never
    1 − (1 − mean p)^k. Needs a verifier that recognizes success at deployment.
    Agent-evaluation guide: p = 0.5, k = 3 gives 0.875 and 1.75 tries.
    """
    if k < 0:
        raise ValueError("k must be non-negative")
    pp = np.atleast_1d(np.asarray(p, dtype=float))
    if np.any((pp < 0) | (pp > 1)):
        raise ValueError("p must lie in [0, 1]")
    miss = np.power(1.0 - pp, k)
    success = 1.0 - miss
    with np.errstate(divide="ignore", invalid="ignore"):
        tries = np.where(pp > 0, success / np.where(pp > 0, pp, 1.0), float(k))
    return float(success.mean()), float(tries.mean())


def budget_matched_retry(p: object, cost_per_try: float, budget: float) -> tuple[int, float, float]:
    """The cheap agent retried at the spend of an expensive one (the retry baseline of the agent-evaluation guide).

    Returns (k, success, expected cost per task) with k = floor(budget / cost_per_try) tries
    allowed; expected cost is below the budget because retries stop at the first success.
    """
    if cost_per_try <= 0 or budget < 0:
        raise ValueError("need cost_per_try > 0 and budget >= 0")
    k = int(np.floor(budget / cost_per_try + 1e-12))
    success, tries = retry_success(p, k)
    return k, success, tries * cost_per_try


def beta_retry_success(a: float, b: float, k: int) -> tuple[float, float]:
    """``retry_success`` averaged over task rates p ~ Beta(a, b) (the retried agent of the agent-evaluation guide).

    success = 1 − E[(1 − p)^k]; expected tries = Σ_{i<k} E[(1 − p)^i]. Agent-evaluation guide: mean 0.42
    at concentration 1.5 climbs to about 82% at 10 tries and 91% at 30, spending under 4 tries
    on average at k = 10.
    """
    from harness.stats.betabinom import beta_pass_at_k

    if k < 0:
        raise ValueError("k must be non-negative")
    miss = 1.0 - np.atleast_1d(beta_pass_at_k(a, b, np.arange(k + 1)))
    return float(1.0 - miss[k]), float(miss[:k].sum())
