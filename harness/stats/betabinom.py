"""Beta-binomial model of per-task success rates: pass^k and pass@k beyond the trials run.

Each task's rate p_j ~ Beta(a, b); given p_j, its c_j successes in n_j trials are binomial
(agent-evaluation guide). Then pass^k = E[p^k] = B(a + k, b)/B(a, b) and pass@k = 1 − B(b + k, a)/B(a, b),
computed with log-Beta functions so nothing overflows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats._util import RngLike, as_rng, encode_labels

# Concentration a + b reported when the data show no spread beyond binomial noise: the
# likelihood is then maximized at infinite concentration (every task at one rate).
_MAX_LOG_PARAM = 16.0
_MIN_LOG_PARAM = -12.0


def at_concentration_cap(a: float, b: float) -> bool:
    """True when a fit ended at the concentration cap: the counts show no spread of task
    rates beyond binomial noise, so a and b are a bound (every task at one rate), not
    estimates to print."""
    return a + b >= float(np.exp(_MAX_LOG_PARAM)) * (1.0 - 1e-6)


def beta_pass_hat_k(a: float, b: float, k: object) -> float | np.ndarray:
    """pass^k = E[p^k] = B(a + k, b)/B(a, b) for task rates p ~ Beta(a, b) (agent-evaluation guide).

    Agent-evaluation guide: mean 0.612, concentration 200 → pass^8 = 0.021; concentration 0.5 → 0.405.
    Elementwise over k (real k >= 0 allowed).
    """
    from scipy.special import betaln

    kk = np.asarray(k, dtype=float)
    out = np.exp(betaln(a + kk, b) - betaln(a, b))
    return float(out) if out.ndim == 0 else out


def beta_pass_at_k(a: float, b: float, k: object) -> float | np.ndarray:
    """pass@k = 1 − E[(1 − p)^k] = 1 − B(b + k, a)/B(a, b) for p ~ Beta(a, b) (agent-evaluation guide)."""
    from scipy.special import betaln

    kk = np.asarray(k, dtype=float)
    out = -np.expm1(betaln(b + kk, a) - betaln(a, b))
    return float(out) if out.ndim == 0 else out


def beta_from_mean_concentration(mean: float, concentration: float) -> tuple[float, float]:
    """(a, b) of the Beta with mean a/(a + b) and concentration s = a + b."""
    if not 0 < mean < 1 or concentration <= 0:
        raise ValueError("need 0 < mean < 1 and concentration > 0")
    return mean * concentration, (1.0 - mean) * concentration


def _as_counts(c: object, n: object) -> tuple[np.ndarray, np.ndarray]:
    cc = np.asarray(c, dtype=float).reshape(-1)
    nn = np.broadcast_to(np.asarray(n, dtype=float), cc.shape).astype(float)
    if np.any(cc < 0) or np.any(cc > nn) or np.any(nn < 1):
        raise ValueError("need 0 <= c <= n and n >= 1 for every task")
    if np.any(cc != np.round(cc)) or np.any(nn != np.round(nn)):
        raise ValueError("c and n must be whole numbers")
    return cc, nn


def beta_binomial_loglik(a: float, b: float, c: object, n: object) -> float:
    """Log-likelihood Σ_j log[C(n_j, c_j) B(c_j + a, n_j − c_j + b)/B(a, b)] of per-task
    counts under the beta-binomial model (docs/statistics.md), by ``scipy.stats.betabinom``.

    The fit below maximizes the same function without its binomial constant, with its own
    gradient and Hessian (thousands of bootstrap refits need them in closed form).
    """
    from scipy.stats import betabinom

    cc, nn = _as_counts(c, n)
    return float(np.sum(betabinom.logpmf(cc, nn, a, b)))


def _moments(cc: np.ndarray, nn: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Method of moments from unbiased pass^1 and pass^2 (agent-evaluation guide); needs n >= 2."""
    if np.any(nn < 2):
        raise ValueError("the moment fit needs at least two trials per task")
    total = w.sum()
    m1 = float(np.dot(w, cc / nn) / total)
    m2 = float(np.dot(w, cc * (cc - 1) / (nn * (nn - 1))) / total)
    if not 0 < m1 < 1:
        raise ValueError("all tasks passed or all failed: the Beta spread is not identified")
    spread = m2 - m1 * m1
    if spread <= 0 or m1 - m2 <= 0:
        s = float(np.exp(_MAX_LOG_PARAM))
    else:
        s = min((m1 - m2) / spread, float(np.exp(_MAX_LOG_PARAM)))
    return m1 * s, (1.0 - m1) * s


def _loglik_parts(
    theta: np.ndarray, cc: np.ndarray, fail: np.ndarray, nn: np.ndarray, w: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean log-likelihood (without the binomial constant), its gradient and Hessian in
    θ = (log a, log b), for pooled counts with multiplicities w."""
    from scipy.special import betaln, digamma, polygamma

    a, b = np.exp(theta)
    total = w.sum()
    ll = (np.dot(w, betaln(cc + a, fail + b)) - total * betaln(a, b)) / total
    d_ab = digamma(a + b)
    d_n = np.dot(w, digamma(nn + a + b)) / total
    ga = np.dot(w, digamma(cc + a)) / total - d_n - digamma(a) + d_ab
    gb = np.dot(w, digamma(fail + b)) / total - d_n - digamma(b) + d_ab
    t_ab = polygamma(1, a + b)
    t_n = np.dot(w, polygamma(1, nn + a + b)) / total
    haa = np.dot(w, polygamma(1, cc + a)) / total - t_n - polygamma(1, a) + t_ab
    hbb = np.dot(w, polygamma(1, fail + b)) / total - t_n - polygamma(1, b) + t_ab
    hab = t_ab - t_n
    grad = np.array([ga * a, gb * b])
    hess = np.array([[haa * a * a + ga * a, hab * a * b], [hab * a * b, hbb * b * b + gb * b]])
    return float(ll), grad, hess


def _mle(cc: np.ndarray, nn: np.ndarray, w: np.ndarray, start: tuple[float, float]) -> np.ndarray:
    """Maximize the beta-binomial likelihood over (log a, log b) by damped Newton steps
    (gradient steps where the Hessian is not negative definite), within box bounds."""
    fail = nn - cc
    theta = np.clip(np.log(np.asarray(start, dtype=float)), _MIN_LOG_PARAM, _MAX_LOG_PARAM)
    ll, grad, hess = _loglik_parts(theta, cc, fail, nn, w)
    for _ in range(200):
        try:
            step = -np.linalg.solve(hess, grad)
            ascent = float(np.dot(step, grad)) > 0 and np.all(np.linalg.eigvalsh(hess) < 0)
        except np.linalg.LinAlgError:
            ascent = False
        if not ascent:
            step = grad / max(1.0, float(np.max(np.abs(grad))))
        step = np.clip(step, -2.0, 2.0)
        scale = 1.0
        improved = False
        while scale > 1e-8:
            cand = np.clip(theta + scale * step, _MIN_LOG_PARAM, _MAX_LOG_PARAM)
            c_ll, c_grad, c_hess = _loglik_parts(cand, cc, fail, nn, w)
            if c_ll >= ll - 1e-15:
                improved = True
                break
            scale /= 2.0
        if not improved:
            break
        moved = float(np.max(np.abs(cand - theta)))
        theta, ll, grad, hess = cand, c_ll, c_grad, c_hess
        # Stop when the step is tiny or the gradient vanishes (ignoring directions pinned at
        # a bound, where the gradient still points outward).
        free = ~(
            ((theta <= _MIN_LOG_PARAM) & (grad < 0)) | ((theta >= _MAX_LOG_PARAM) & (grad > 0))
        )
        if moved < 1e-10 or float(np.max(np.abs(grad[free]), initial=0.0)) < 1e-10:
            break
    fitted: np.ndarray = np.exp(theta)
    return fitted


def _fit(cc: np.ndarray, nn: np.ndarray, w: np.ndarray, method: str) -> tuple[float, float]:
    if method == "moments":
        return _moments(cc, nn, w)
    if method != "mle":
        raise ValueError("method must be 'mle' or 'moments'")
    total = w.sum()
    m1 = float(np.dot(w, cc / nn) / total)
    if not 0 < m1 < 1:
        raise ValueError("all tasks passed or all failed: the Beta spread is not identified")
    try:
        start = _moments(cc, nn, w)
    except ValueError:  # single-trial tasks: start from a flat-ish Beta at the mean
        start = (m1 * 2.0, (1.0 - m1) * 2.0)
    a, b = _mle(cc, nn, w, start)
    return float(a), float(b)


def fit_beta_binomial(c: object, n: object, method: str = "mle") -> tuple[float, float]:
    """Fit Beta(a, b) to per-task success counts c out of n trials (agent-evaluation guide).

    ``method="mle"`` maximizes ``beta_binomial_loglik`` over (log a, log b) by damped Newton
    steps with the closed-form gradient and Hessian, started from the moment fit. ``method="moments"`` uses m₁ = mean pass^1 and m₂ = mean
    unbiased pass^2 (needs n >= 2): s = a + b = (m₁ − m₂)/(m₂ − m₁²), a = m₁ s, b = (1 − m₁) s.
    When the counts show no spread beyond binomial noise the concentration is capped at
    e^16 (every task at the same rate). Assumes independent tasks with i.i.d. trials.
    """
    cc, nn = _as_counts(c, n)
    return _fit(cc, nn, np.ones_like(cc), method)


@dataclass(frozen=True)
class PassKPrediction:
    """Model-based pass^k (or pass@k) predictions with bootstrap intervals."""

    ks: np.ndarray
    estimate: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    a: float
    b: float
    metric: str
    """'pass_hat' (all k succeed) or 'pass_at' (at least one succeeds)."""
    confidence: float
    n_boot: int
    replicates: np.ndarray
    """Bootstrap predictions, shape (n_boot, len(ks))."""


def predict_pass_hat_k(
    c: object,
    n: object,
    ks: object,
    n_boot: int = 1000,
    rng: RngLike = None,
    *,
    method: str = "mle",
    confidence: float = 0.95,
    clusters: object | None = None,
    metric: str = "pass_hat",
) -> PassKPrediction:
    """Predict pass^k for any k (also beyond the trials run) from a beta-binomial fit.

    Estimand: mean over the task population of p_j^k (``metric="pass_hat"``) or of
    1 − (1 − p_j)^k (``metric="pass_at"``), under p_j ~ Beta(a, b) (agent-evaluation guide: predicting
    pass^16 from four trials per task). The interval is a percentile bootstrap that resamples
    tasks (or whole ``clusters`` of tasks) and refits. Identical (c, n) pairs are pooled, so
    each refit costs a few unique pairs regardless of the number of tasks.
    Assumes the Beta describes the spread of task rates; check it against unbiased pass^k at
    the k you did run.
    """
    from harness.stats.bootstrap import cluster_resample_counts

    cc, nn = _as_counts(c, n)
    k_arr = np.atleast_1d(np.asarray(ks, dtype=float))
    if metric == "pass_hat":
        curve = beta_pass_hat_k
    elif metric == "pass_at":
        curve = beta_pass_at_k
    else:
        raise ValueError("metric must be 'pass_hat' or 'pass_at'")
    pairs = np.column_stack([cc, nn])
    uniq, pair_idx = np.unique(pairs, axis=0, return_inverse=True)
    pair_idx = pair_idx.reshape(-1)
    uc, un = uniq[:, 0], uniq[:, 1]
    ones = np.bincount(pair_idx, minlength=uniq.shape[0]).astype(float)
    a, b = _fit(uc, un, ones, method)
    estimate = np.asarray(curve(a, b, k_arr), dtype=float)

    if clusters is None:
        codes = np.arange(cc.size)
    else:
        _, codes = encode_labels(clusters)
        if codes.size != cc.size:
            raise ValueError("clusters must have one label per task")
    n_clusters = int(codes.max()) + 1
    reps = np.empty((n_boot, k_arr.size))
    row = 0
    for counts in cluster_resample_counts(n_clusters, n_boot, as_rng(rng)):
        for mult in counts:
            w = np.bincount(pair_idx, weights=mult[codes].astype(float), minlength=uniq.shape[0])
            keep = w > 0
            try:
                ab = _fit(uc[keep], un[keep], w[keep], method)
                reps[row] = curve(ab[0], ab[1], k_arr)
            except ValueError:  # a resample with all-pass or all-fail tasks
                m1 = float(np.dot(w, uc / un) / w.sum())
                reps[row] = m1  # degenerate: every task at 0 or 1, so pass^k = pass@k = m1
            row += 1
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(reps, [tail, 1.0 - tail], axis=0)
    return PassKPrediction(
        ks=k_arr,
        estimate=estimate,
        lo=lo,
        hi=hi,
        a=a,
        b=b,
        metric=metric,
        confidence=confidence,
        n_boot=n_boot,
        replicates=reps,
    )
