"""Maximum-likelihood fits of per-task pass counts, many weightings at once: the beta-binomial
and the beta-binomial with an always-pass share.

    p_j ~ π·δ₁ + (1 − π)·Beta(a, b),   P(c_j | n_j) = π·[c_j = n_j] + (1 − π)·BB(c_j; n_j, a, b)

(π = 0: the plain beta-binomial of the agent-evaluation guide). Counts are pooled into their
distinct (c, n) cells, and each row of the weight matrix ``w`` (cells × rows) is one fit: the
full sample, or a bootstrap resample. EM on π (the posterior share of an all-pass cell that
is an always-pass task), damped Newton steps on (log a, log b) with the closed-form gradient
and Hessian of the weighted beta-binomial likelihood, run to convergence (a fit that stops
early, near its start, makes bootstrap replicates hug the full-sample fit and the interval
too narrow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOG_BOUNDS = (-8.0, 9.0)
"""Bounds on log a, log b: beyond e^9 the counts show no spread beyond binomial noise."""


def log_bb(
    c: np.ndarray, n: np.ndarray, a: np.ndarray | float, b: np.ndarray | float
) -> np.ndarray:
    """log of the beta-binomial pmf of c successes in n trials (broadcasting)."""
    from scipy.special import betaln, gammaln

    comb = gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1)
    return np.asarray(comb + betaln(c + a, n - c + b) - betaln(a, b), dtype=float)


@dataclass(frozen=True)
class Fits:
    """One fit per row of the weights: π (0 for the plain beta-binomial), a, b, log-likelihood."""

    pi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    loglik: np.ndarray


def loglik(
    c: np.ndarray, n: np.ndarray, w: np.ndarray, pi: object, a: object, b: object
) -> np.ndarray:
    """Weighted log-likelihood per row of ``w`` (rows × cells) at per-row (π, a, b)."""
    p, aa, bb = (np.asarray(x, dtype=float).reshape(-1, 1) for x in (pi, a, b))
    lik = (1 - p) * np.exp(log_bb(c[None, :], n[None, :], aa, bb)) + p * (c == n)[None, :]
    return np.asarray(np.sum(w * np.log(np.maximum(lik, 1e-300)), axis=1), dtype=float)


def _newton(theta: np.ndarray, c: np.ndarray, n: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """One damped Newton step on (log a, log b) of the weighted beta-binomial likelihood."""
    from scipy.special import digamma, polygamma

    a, b = np.exp(theta[:, :1]), np.exp(theta[:, 1:])
    wt = wb.sum(axis=1, keepdims=True)
    cc, ff, nn = c[None, :], (n - c)[None, :], n[None, :]
    dn, dab = digamma(nn + a + b), digamma(a + b)
    ga = np.sum(wb * (digamma(cc + a) - dn), axis=1, keepdims=True) - wt * (digamma(a) - dab)
    gb = np.sum(wb * (digamma(ff + b) - dn), axis=1, keepdims=True) - wt * (digamma(b) - dab)
    tn, tab = polygamma(1, nn + a + b), polygamma(1, a + b)
    haa = np.sum(wb * (polygamma(1, cc + a) - tn), axis=1, keepdims=True) - wt * (
        polygamma(1, a) - tab
    )
    hbb = np.sum(wb * (polygamma(1, ff + b) - tn), axis=1, keepdims=True) - wt * (
        polygamma(1, b) - tab
    )
    hab = -np.sum(wb * tn, axis=1, keepdims=True) + wt * tab
    g1, g2 = (ga * a)[:, 0], (gb * b)[:, 0]
    h11, h22 = (haa * a * a + ga * a)[:, 0], (hbb * b * b + gb * b)[:, 0]
    h12 = (hab * a * b)[:, 0]
    det = h11 * h22 - h12 * h12
    newton = (h11 < 0) & (det > 0)
    safe = np.where(newton, det, 1.0)
    s1 = np.where(newton, -(h22 * g1 - h12 * g2) / safe, g1 / np.maximum(1, np.abs(g1)))
    s2 = np.where(newton, -(h11 * g2 - h12 * g1) / safe, g2 / np.maximum(1, np.abs(g2)))
    step = np.clip(np.column_stack([s1, s2]), -1.0, 1.0)
    return np.asarray(np.clip(theta + step, *LOG_BOUNDS), dtype=float)


def fit_counts(
    c: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    start: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    always_pass: bool,
    iterations: int = 300,
    tol: float = 1e-9,
) -> Fits:
    """Fit every row of ``w`` (rows × cells) from ``start`` (π, a, b per row); ``always_pass``
    False holds π at 0 (the plain beta-binomial). Iterates until no row's log-likelihood moves
    by more than ``tol`` (or ``iterations``)."""
    w = np.atleast_2d(np.asarray(w, dtype=float))
    rows = w.shape[0]
    total = w.sum(axis=1)
    allpass = (c == n).astype(float)
    pi = np.broadcast_to(np.asarray(start[0], dtype=float), (rows,)).copy()
    pi = np.clip(pi, 1e-6, 0.99) if always_pass else np.zeros(rows)
    theta = np.log(
        np.clip(
            np.column_stack(
                [np.broadcast_to(start[1], (rows,)), np.broadcast_to(start[2], (rows,))]
            ),
            np.exp(LOG_BOUNDS[0]),
            np.exp(LOG_BOUNDS[1]),
        )
    )
    last = np.full(rows, -np.inf)
    for _ in range(iterations):
        a, b = np.exp(theta[:, :1]), np.exp(theta[:, 1:])
        if always_pass:
            top = np.exp(log_bb(c[None, :], n[None, :], a, b))
            resp = allpass[None, :] * pi[:, None] / (pi[:, None] + (1 - pi[:, None]) * top)
            pi = np.clip(np.sum(w * resp, axis=1) / total, 0.0, 1 - 1e-9)
            wb = w * (1 - resp)
        else:
            wb = w
        theta = _newton(theta, c, n, wb)
        ll = loglik(c, n, w, pi, np.exp(theta[:, 0]), np.exp(theta[:, 1]))
        done = np.all(np.abs(ll - last) < tol * np.maximum(1.0, np.abs(ll)))
        last = ll
        if done:
            break
    return Fits(pi=pi, a=np.exp(theta[:, 0]), b=np.exp(theta[:, 1]), loglik=last)


def best_fit(c: np.ndarray, n: np.ndarray, w: np.ndarray, *, always_pass: bool) -> Fits:
    """The full sample's fit (``w`` one row): the best of several starts, fitted at once."""
    w = np.asarray(w, dtype=float).reshape(1, -1)
    m1 = float(w[0] @ (c / n) / w.sum())
    if not 0 < m1 < 1:
        raise ValueError(
            "all tasks passed or all failed: the spread of task rates is not identified"
        )
    share = float(w[0] @ (c == n) / w.sum())
    starts = np.array(
        [
            (0.5 * share, 2 * m1, 2 * (1 - m1)),
            (0.8 * share, 1.0, 1.0),
            (1e-3, 0.5 * m1, 0.5 * (1 - m1)),
            (0.3 * share, 10 * m1, 10 * (1 - m1)),
        ]
    )
    rows = np.repeat(w, starts.shape[0], axis=0)
    fits = fit_counts(
        c, n, rows, (starts[:, 0], starts[:, 1], starts[:, 2]), always_pass=always_pass
    )
    i = int(np.argmax(fits.loglik))
    return Fits(fits.pi[i : i + 1], fits.a[i : i + 1], fits.b[i : i + 1], fits.loglik[i : i + 1])
