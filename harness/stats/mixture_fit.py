"""Maximum-likelihood fits of per-task pass counts, many weightings at once: the beta-binomial
with a share of tasks that always pass and a share that never pass, either or both held at 0.

    p_j ~ π·δ₁ + π₀·δ₀ + (1 − π − π₀)·Beta(a, b),
    P(c_j | n_j) = π·[c_j = n_j] + π₀·[c_j = 0] + (1 − π − π₀)·BB(c_j; n_j, a, b)

(π = π₀ = 0: the plain beta-binomial of the agent-evaluation guide; π₀ = 0: the always-pass
mixture; both free: the zero-and-one-inflated beta-binomial). Counts are pooled into their
distinct (c, n) cells, and each row of the weight matrix ``w`` (cells × rows) is one fit: the
full sample, or a bootstrap resample. EM on π and π₀ (the posterior share of an all-pass
cell that is an always-pass task, of an all-fail cell that is a never-pass task), damped
Newton steps on (log a, log b) with the closed-form gradient
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
    """One fit per row of the weights: π (always-pass share), a, b, log-likelihood and π₀
    (never-pass share); a share held out of the model is 0."""

    pi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    loglik: np.ndarray
    pi0: np.ndarray

    def rows(self, keep: np.ndarray | slice) -> Fits:
        """The fits of the rows ``keep`` selects (an index or a mask)."""
        return Fits(*(getattr(self, f)[keep] for f in FIELDS))


FIELDS = ("pi", "a", "b", "loglik", "pi0")


def pick(use: np.ndarray, yes: Fits, no: Fits) -> Fits:
    """Per row, ``yes``'s fit where ``use`` holds, else ``no``'s."""
    return Fits(*(np.where(use, getattr(yes, f), getattr(no, f)) for f in FIELDS))


def loglik(
    c: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    pi: object,
    a: object,
    b: object,
    pi0: object = 0.0,
) -> np.ndarray:
    """Weighted log-likelihood per row of ``w`` (rows × cells) at per-row (π, a, b, π₀)."""
    p, aa, bb, q = (np.asarray(x, dtype=float).reshape(-1, 1) for x in (pi, a, b, pi0))
    lik = (1 - p - q) * np.exp(log_bb(c[None, :], n[None, :], aa, bb))
    lik = lik + p * (c == n)[None, :] + q * (c == 0)[None, :]
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
    never_pass: bool = False,
    start_never: object = 0.02,
    iterations: int = 300,
    tol: float = 1e-9,
) -> Fits:
    """Fit every row of ``w`` (rows × cells) from ``start`` (π, a, b per row) and
    ``start_never`` (π₀); ``always_pass`` / ``never_pass`` False hold π / π₀ at 0 (both: the
    plain beta-binomial). Iterates until no row's log-likelihood moves by more than ``tol``
    (or ``iterations``)."""
    w = np.atleast_2d(np.asarray(w, dtype=float))
    rows = w.shape[0]
    total = w.sum(axis=1)
    allpass, allfail = (c == n).astype(float), (c == 0).astype(float)

    def share(x: object, free: bool) -> np.ndarray:
        v = np.broadcast_to(np.asarray(x, dtype=float), (rows,))
        return np.clip(v, 1e-6, 0.49) if free else np.zeros(rows)

    pi, pi0 = share(start[0], always_pass), share(start_never, never_pass)
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
        wb = w
        if always_pass or never_pass:
            rest = (1 - pi - pi0)[:, None] * np.exp(log_bb(c[None, :], n[None, :], a, b))
            r1 = allpass[None, :] * pi[:, None] / np.maximum(pi[:, None] + rest, 1e-300)
            r0 = allfail[None, :] * pi0[:, None] / np.maximum(pi0[:, None] + rest, 1e-300)
            pi = np.sum(w * r1, axis=1) / total
            pi0 = np.sum(w * r0, axis=1) / total
            over = np.maximum(pi + pi0, 1 - 1e-9) / (1 - 1e-9)  # keep a sliver of the Beta
            pi, pi0 = pi / over, pi0 / over
            wb = w * (1 - r1 - r0)
        theta = _newton(theta, c, n, wb)
        ll = loglik(c, n, w, pi, np.exp(theta[:, 0]), np.exp(theta[:, 1]), pi0)
        done = np.all(np.abs(ll - last) < tol * np.maximum(1.0, np.abs(ll)))
        last = ll
        if done:
            break
    return Fits(pi=pi, a=np.exp(theta[:, 0]), b=np.exp(theta[:, 1]), loglik=last, pi0=pi0)


def best_fit(
    c: np.ndarray, n: np.ndarray, w: np.ndarray, *, always_pass: bool, never_pass: bool = False
) -> Fits:
    """The full sample's fit (``w`` one row): the best of several starts, fitted at once."""
    w = np.asarray(w, dtype=float).reshape(1, -1)
    m1 = float(w[0] @ (c / n) / w.sum())
    if not 0 < m1 < 1:
        raise ValueError(
            "all tasks passed or all failed: the spread of task rates is not identified"
        )
    share = float(w[0] @ (c == n) / w.sum())
    zero = float(w[0] @ (c == 0) / w.sum())
    starts = np.array(
        [
            (0.5 * share, 2 * m1, 2 * (1 - m1), 0.5 * zero),
            (0.8 * share, 1.0, 1.0, 0.8 * zero),
            (1e-3, 0.5 * m1, 0.5 * (1 - m1), 1e-3),
            (0.3 * share, 10 * m1, 10 * (1 - m1), 0.3 * zero),
        ]
    )
    rows = np.repeat(w, starts.shape[0], axis=0)
    fits = fit_counts(
        c,
        n,
        rows,
        (starts[:, 0], starts[:, 1], starts[:, 2]),
        always_pass=always_pass,
        never_pass=never_pass,
        start_never=starts[:, 3],
    )
    i = int(np.argmax(fits.loglik))
    return fits.rows(slice(i, i + 1))
