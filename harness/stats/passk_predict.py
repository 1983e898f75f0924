"""pass^k (and pass@k) beyond the trials run, from a model that is checked, or withheld.

The plain beta-binomial prediction (agent-evaluation guide: p_j ~ Beta(a, b)) is biased when
task rates are not beta-distributed, and the common way they are not is that some tasks always
pass: a Beta puts no mass at p = 1, so its pass^k falls toward 0 as k grows while the truth
falls toward the always-pass share. Here two models are fitted by maximum likelihood to the
per-task pass counts (``harness.stats.mixture_fit``):

    beta-binomial         p_j ~ Beta(a, b),                 pass^k = B(a + k, b)/B(a, b)
    always-pass mixture   p_j ~ π·δ₁ + (1 − π)·Beta(a, b),  pass^k = π + (1 − π)·B(a + k, b)/B(a, b)

(pass@k = π + (1 − π)(1 − B(b + k, a)/B(a, b))). The mixture is used when the likelihood ratio
test of π = 0 rejects at ``ALPHA`` (the statistic's null law is ½χ²₀ + ½χ²₁: π = 0 lies on the
boundary; Self and Liang 1987). The chosen model is then checked against the distribution of
per-task pass counts: the G² statistic of observed against fitted counts per trial count, χ²
on Σ_t t − (parameters) df; a p-value below ``ALPHA`` withholds the prediction with a one-line
reason, and so do fewer than ``MIN_TASKS`` tasks or a model with no df left to check it (the
mixture needs 4 trials per task, the beta-binomial 3).

The interval is a percentile bootstrap of the whole procedure: each resample of tasks (or of
whole clusters) refits both models to convergence and chooses between them again, so the
interval carries the uncertainty of the choice. Assumes trials of a task independent given its
rate and tasks (clusters) independent; the extrapolation itself is only as good as the model,
which is why it is checked and named.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from harness.stats._util import RngLike, as_rng, encode_labels
from harness.stats.mixture_fit import Fits, best_fit, fit_counts, log_bb

ALPHA = 0.05
MIN_TASKS = 10
MODELS = {False: "beta-binomial", True: "beta-binomial with an always-pass share"}


@dataclass(frozen=True)
class Extrapolation:
    """Predictions for each k, or the one-line reason there are none (``withheld``)."""

    ks: np.ndarray
    estimate: np.ndarray | None
    lo: np.ndarray | None
    hi: np.ndarray | None
    model: str | None = None
    always_pass: float | None = None
    """The fitted share π of tasks that always pass (0 under the plain beta-binomial)."""
    a: float | None = None
    b: float | None = None
    check_p: float | None = None
    check_df: int | None = None
    mixture_p: float | None = None
    """p-value of the likelihood ratio test of π = 0 (small: some tasks always pass)."""
    withheld: str | None = None
    replicates: int = 0
    fit: Fits | None = None
    """The chosen model's fit (None when withheld)."""
    boot: Fits | None = None
    """The chosen fit of every bootstrap resample (a flat resample: π = its mean, a, b NaN)."""
    confidence: float = 0.95
    bound_lo: np.ndarray | None = None
    bound_hi: np.ndarray | None = None
    """The model-free bound on pass^k at ``ks`` (``harness.stats.passk_bounds``): what the
    counts support whatever the shape of the task rates; computed even when withheld."""
    counts: tuple[np.ndarray, np.ndarray, object | None] | None = None
    """(c, n, clusters) the bounds are computed from."""

    def bounds(self, ks: object, metric: str = "pass_hat") -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) of the model-free bound on pass^k (or pass@k) at ``ks``."""
        from harness.stats.passk_bounds import passk_bounds

        if self.counts is None:
            raise ValueError(f"no bound: {self.withheld}")
        c, n, clusters = self.counts
        b = passk_bounds(c, n, ks, confidence=self.confidence, clusters=clusters, metric=metric)
        return b.lo, b.hi

    def curve(
        self, ks: object, metric: str = "pass_hat"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, lo, hi) of pass^k (or pass@k) at ``ks`` from the fit and its resamples."""
        if self.fit is None or self.boot is None:
            raise ValueError(f"no prediction: {self.withheld}")
        k = np.atleast_1d(np.asarray(ks, dtype=float))
        reps = curves(self.boot, k, metric)
        tail = (1.0 - self.confidence) / 2.0
        lo, hi = np.quantile(reps, [tail, 1.0 - tail], axis=0)
        return curves(self.fit, k, metric)[0], lo, hi


def curves(fits: Fits, k: np.ndarray, metric: str) -> np.ndarray:
    """pass^k (``metric='pass_hat'``) or pass@k (``'pass_at'``) per fit (rows) and k (columns)."""
    from scipy.special import betaln

    a, b, kk = fits.a[:, None], fits.b[:, None], k[None, :]
    flat = np.isnan(a)  # a resample where every task passed (or failed): pass^k = its mean
    a, b = np.where(flat, 1.0, a), np.where(flat, 1.0, b)
    if metric == "pass_hat":
        part = np.exp(betaln(a + kk, b) - betaln(a, b))
    elif metric == "pass_at":
        part = -np.expm1(betaln(b + kk, a) - betaln(a, b))
    else:
        raise ValueError("metric must be 'pass_hat' or 'pass_at'")
    part = np.where(flat, 0.0, part)
    return np.asarray(fits.pi[:, None] + (1 - fits.pi[:, None]) * part, dtype=float)


def mixture_p_value(beta: Fits, mixture: Fits) -> np.ndarray:
    """p-value of π = 0 per row: ½·P(χ²₁ > 2(ℓ_mix − ℓ_beta)) (1 when the mixture gains nothing)."""
    from scipy.stats import chi2

    lr = np.maximum(2.0 * (mixture.loglik - beta.loglik), 0.0)
    return np.where(lr > 1e-9, 0.5 * chi2.sf(lr, 1), 1.0)


def fit_check(c: np.ndarray, n: np.ndarray, fit: Fits, params: int) -> tuple[float, int]:
    """(p-value, df) of the G² test of the fitted model against the observed counts of each
    trial count (cells c = 0..n); NaN p when no df are left."""
    from scipy.stats import chi2

    g2, cells = 0.0, 0
    pi, a, b = float(fit.pi[0]), float(fit.a[0]), float(fit.b[0])
    for t in np.unique(n):
        obs = np.bincount(c[n == t].astype(int), minlength=int(t) + 1).astype(float)
        cs = np.arange(int(t) + 1, dtype=float)
        prob = (1 - pi) * np.exp(log_bb(cs, np.full_like(cs, t), a, b))
        prob[-1] += pi
        expected = obs.sum() * prob
        keep = obs > 0
        g2 += 2.0 * float(
            np.sum(obs[keep] * np.log(obs[keep] / np.maximum(expected[keep], 1e-300)))
        )
        cells += int(t)
    df = cells - params
    return (float("nan"), df) if df < 1 else (float(chi2.sf(g2, df)), df)


def _cells(c: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    uniq, idx = np.unique(np.column_stack([c, n]), axis=0, return_inverse=True)
    return uniq[:, 0].astype(float), uniq[:, 1].astype(float), idx.reshape(-1)


def _choose(beta: Fits, mixture: Fits) -> tuple[Fits, np.ndarray]:
    """Per row, the mixture where the test of π = 0 rejects, else the beta-binomial."""
    use = mixture_p_value(beta, mixture) < ALPHA
    pick = [
        np.where(use, getattr(mixture, f), getattr(beta, f)) for f in ("pi", "a", "b", "loglik")
    ]
    return Fits(*pick), use


def predict_pass_k(
    c: object,
    n: object,
    ks: object,
    *,
    n_boot: int = 200,
    rng: RngLike = None,
    confidence: float = 0.95,
    clusters: object | None = None,
    metric: str = "pass_hat",
) -> Extrapolation:
    """Predicted pass^k (or pass@k) for each k, checked or withheld (module docstring).
    ``c``, ``n``: passes and counted trials per task; ``clusters``: each task's cluster."""
    cc = np.asarray(c, dtype=float).reshape(-1)
    nn = np.broadcast_to(np.asarray(n, dtype=float), cc.shape).astype(float)
    k = np.atleast_1d(np.asarray(ks, dtype=float))
    none = Extrapolation(k, None, None, None)
    if cc.size < MIN_TASKS:
        why = f"needs at least {MIN_TASKS} tasks to fit the spread of task rates (has {cc.size})"
        return replace(none, withheld=why)
    none = replace(none, counts=(cc, nn, clusters), confidence=confidence)
    b_lo, b_hi = none.bounds(k, metric)
    none = replace(none, bound_lo=b_lo, bound_hi=b_hi)
    if nn.min() < 3:
        why = (
            "needs at least 3 trials per task to check the model it extrapolates from (has "
            f"{int(nn.min())})"
        )
        return replace(none, withheld=why)
    uc, un, idx = _cells(cc, nn)
    ones = np.bincount(idx, minlength=uc.size).astype(float)
    try:
        beta = best_fit(uc, un, ones, always_pass=False)
    except ValueError as exc:
        return replace(none, withheld=f"not fitted: {exc}")
    mixture = best_fit(uc, un, ones, always_pass=True)
    chosen, use = _choose(beta, mixture)
    mixed = bool(use[0])
    p_check, df = fit_check(cc, nn, chosen, 3 if mixed else 2)
    out = replace(
        none,
        model=MODELS[mixed],
        always_pass=float(chosen.pi[0]),
        a=float(chosen.a[0]),
        b=float(chosen.b[0]),
        check_p=p_check,
        check_df=df,
        mixture_p=float(mixture_p_value(beta, mixture)[0]),
    )
    if df < 1:
        why = (
            f"some tasks always pass (likelihood ratio p = {out.mixture_p:.3g}), and with "
            f"{int(nn.min())} trials per task the model with an always-pass share cannot be "
            "checked: run 4 or more"
        )
        return replace(out, withheld=why)
    if p_check < ALPHA:
        why = (
            f"the {MODELS[mixed]} does not fit the per-task pass counts (G² p = {p_check:.3g} "
            f"on {df} df), so it cannot be trusted beyond the trials run"
        )
        return replace(out, withheld=why)
    boot = _bootstrap(uc, un, idx, clusters, n_boot, rng, (beta, mixture))
    out = replace(out, fit=chosen, boot=boot, replicates=n_boot)
    estimate, lo, hi = out.curve(k, metric)
    return replace(out, estimate=estimate, lo=lo, hi=hi)


def _bootstrap(
    uc: np.ndarray,
    un: np.ndarray,
    idx: np.ndarray,
    clusters: object | None,
    n_boot: int,
    rng: RngLike,
    full: tuple[Fits, Fits],
) -> Fits:
    """The chosen fit of each resample of tasks (or clusters): both models refitted from the
    full sample's fits, to convergence, and chosen between again."""
    from harness.stats.bootstrap import cluster_resample_counts

    codes = np.arange(idx.size) if clusters is None else encode_labels(clusters)[1]
    if codes.size != idx.size:
        raise ValueError("clusters must have one label per task")
    units = int(codes.max()) + 1
    blocks = []
    for counts in cluster_resample_counts(units, n_boot, as_rng(rng)):
        per_task = counts[:, codes].astype(float)
        w = np.zeros((counts.shape[0], uc.size))
        np.add.at(w.T, idx, per_task.T)
        blocks.append(w)
    w = np.vstack(blocks)
    m1 = (w @ (uc / un)) / w.sum(axis=1)
    flat = (m1 <= 0) | (m1 >= 1)  # every resampled task passed (or failed)
    out = Fits(m1.copy(), np.full(m1.size, np.nan), np.full(m1.size, np.nan), np.zeros(m1.size))
    if np.any(~flat):
        beta, mixture = full
        sub = w[~flat]
        rb = fit_counts(uc, un, sub, (beta.pi, beta.a, beta.b), always_pass=False)
        start_pi = np.maximum(mixture.pi, 0.02)
        rm = fit_counts(uc, un, sub, (start_pi, mixture.a, mixture.b), always_pass=True)
        better = rb.loglik > rm.loglik  # the mixture nests the beta: never below it
        rm = Fits(
            np.where(better, 0.0, rm.pi),
            np.where(better, rb.a, rm.a),
            np.where(better, rb.b, rm.b),
            np.maximum(rm.loglik, rb.loglik),
        )
        chosen, _ = _choose(rb, rm)
        for name in ("pi", "a", "b", "loglik"):
            getattr(out, name)[~flat] = getattr(chosen, name)
    return out
