"""pass^k (and pass@k) beyond the trials run, from a model that is checked, or withheld.

The plain beta-binomial prediction (agent-evaluation guide: p_j ~ Beta(a, b)) is biased when
task rates are not beta-distributed, and the common way they are not is that some tasks always
pass (or never do): a Beta puts no mass at p = 1, so its pass^k falls toward 0 as k grows while
the truth falls toward the always-pass share. Four nested models are fitted by maximum
likelihood to the per-task pass counts (``harness.stats.mixture_fit``):

    p_j ~ π·δ₁ + π₀·δ₀ + (1 − π − π₀)·Beta(a, b),   pass^k = π + (1 − π − π₀)·B(a + k, b)/B(a, b)

with π = π₀ = 0 (the beta-binomial), π₀ = 0 (an always-pass share), π = 0 (a never-pass share)
or both free (the zero-and-one-inflated beta-binomial); pass@k = π + (1 − π − π₀)(1 − B(b + k,
a)/B(a, b)). The choice is forward selection: the share that raises the likelihood more is
added when its likelihood ratio test rejects at ``SHARE_ALPHA``, then the other share when its
own test rejects (each statistic's null law is ½χ²₀ + ½χ²₁: a share of 0 lies on the
boundary; Self and Liang 1987). The chosen model is then checked against the distribution of
per-task pass counts: the G² statistic of observed against fitted counts per trial count, χ²
on Σ_t t − (parameters) df; a p-value below ``ALPHA`` withholds the prediction with a one-line
reason, and so do fewer than ``MIN_TASKS`` tasks or a model with no df left to check it (the
model with both shares needs 5 trials per task, one share 4, the beta-binomial 3).

The interval is a percentile bootstrap of the whole procedure: each resample of tasks (or of
whole clusters) refits every model to convergence and chooses between them again, so the
interval carries the uncertainty of the choice. Assumes trials of a task independent given its
rate and tasks (clusters) independent; the extrapolation itself is only as good as the model,
which is why it is checked and named (and the report widens it to the model-free bound of
``harness.stats.passk_bounds``: no check on few trials tells these models from other shapes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from harness.stats._util import RngLike, as_rng, encode_labels
from harness.stats.mixture_fit import FIELDS, Fits, best_fit, fit_counts, log_bb, pick

ALPHA = 0.05
"""Level of the G² check that withholds a prediction."""
SHARE_ALPHA = 0.2
"""Level at which a likelihood ratio test adds an always- or never-pass share: loose, because
a share missed biases the prediction (coverage 85% at 5% for tasks that always and never
pass, 200 tasks) while one added needlessly only widens it."""
MIN_TASKS = 10
MODELS = {
    "bb": (False, False, 2, "beta-binomial"),
    "one": (True, False, 3, "beta-binomial with an always-pass share"),
    "zero": (False, True, 3, "beta-binomial with a never-pass share"),
    "both": (True, True, 4, "beta-binomial with always- and never-pass shares"),
}
"""key: (always-pass share free, never-pass share free, parameters, name)."""


@dataclass(frozen=True)
class Extrapolation:
    """Predictions for each k, or the one-line reason there are none (``withheld``)."""

    ks: np.ndarray
    estimate: np.ndarray | None
    lo: np.ndarray | None
    hi: np.ndarray | None
    model: str | None = None
    always_pass: float | None = None
    """The fitted share π of tasks that always pass (0 in a model without it)."""
    never_pass: float | None = None
    """The fitted share π₀ of tasks that never pass (0 in a model without it)."""
    a: float | None = None
    b: float | None = None
    check_p: float | None = None
    check_df: int | None = None
    mixture_p: float | None = None
    """p-value of the likelihood ratio test of the first share added (the always- or
    never-pass share that raises the likelihood more) against the plain beta-binomial."""
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
    rest = 1 - fits.pi[:, None] - fits.pi0[:, None]
    return np.asarray(fits.pi[:, None] + rest * part, dtype=float)


def share_p_value(simpler: Fits, richer: Fits) -> np.ndarray:
    """p-value per row of the test that the share ``richer`` adds is 0: ½·P(χ²₁ > 2(ℓ_rich −
    ℓ_simple)) (the share's 0 lies on the boundary; 1 when it gains nothing)."""
    from scipy.stats import chi2

    lr = np.maximum(2.0 * (richer.loglik - simpler.loglik), 0.0)
    return np.where(lr > 1e-9, 0.5 * chi2.sf(lr, 1), 1.0)


def fit_check(c: np.ndarray, n: np.ndarray, fit: Fits, params: int) -> tuple[float, int]:
    """(p-value, df) of the G² test of the fitted model against the observed counts of each
    trial count (cells c = 0..n); NaN p when no df are left."""
    from scipy.stats import chi2

    g2, cells = 0.0, 0
    pi, a, b, pi0 = (float(getattr(fit, f)[0]) for f in ("pi", "a", "b", "pi0"))
    for t in np.unique(n):
        obs = np.bincount(c[n == t].astype(int), minlength=int(t) + 1).astype(float)
        cs = np.arange(int(t) + 1, dtype=float)
        prob = (1 - pi - pi0) * np.exp(log_bb(cs, np.full_like(cs, t), a, b))
        prob[-1] += pi
        prob[0] += pi0
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


NESTS = (("one", ("bb",)), ("zero", ("bb",)), ("both", ("bb", "one", "zero")))
"""Each model and the simpler ones it nests: its fit is never below theirs."""


def _fit_all(
    uc: np.ndarray, un: np.ndarray, w: np.ndarray, full: dict[str, Fits] | None = None
) -> dict[str, Fits]:
    """Every model fitted to every row of ``w``: the full sample from several starts
    (``full`` None), or resamples started from the full sample's fits."""
    out: dict[str, Fits] = {}
    for key, (always, never, _, _) in MODELS.items():
        if full is None:
            out[key] = best_fit(uc, un, w, always_pass=always, never_pass=never)
        else:
            f = full[key]
            start = (np.maximum(f.pi, 0.02), f.a, f.b)
            out[key] = fit_counts(
                uc,
                un,
                w,
                start,
                always_pass=always,
                never_pass=never,
                start_never=np.maximum(f.pi0, 0.02),
            )
    for big, smaller in NESTS:
        for small in smaller:
            out[big] = pick(out[small].loglik > out[big].loglik, out[small], out[big])
    return out


def _choose(fits: dict[str, Fits]) -> tuple[Fits, np.ndarray, np.ndarray]:
    """Per row, forward selection by likelihood ratio tests at ``SHARE_ALPHA``: the share (always-
    or never-pass) that raises the likelihood more is added when its test rejects, then the
    other when its own test rejects. Returns the chosen fits, their model keys and the p of
    the first share."""
    one, zero, both, bb = fits["one"], fits["zero"], fits["both"], fits["bb"]
    first_one = one.loglik >= zero.loglik
    first = pick(first_one, one, zero)
    p_first = share_p_value(bb, first)
    step1, step2 = p_first < SHARE_ALPHA, share_p_value(first, both) < SHARE_ALPHA
    chosen = pick(step1, pick(step2, both, first), bb)
    keys = np.where(step1, np.where(step2, "both", np.where(first_one, "one", "zero")), "bb")
    return chosen, keys, p_first


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
        fits = _fit_all(uc, un, ones)
    except ValueError as exc:
        return replace(none, withheld=f"not fitted: {exc}")
    chosen, keys, p_first = _choose(fits)
    key = str(keys[0])
    p_check, df = fit_check(cc, nn, chosen, MODELS[key][2])
    out = replace(
        none,
        model=MODELS[key][3],
        always_pass=float(chosen.pi[0]),
        never_pass=float(chosen.pi0[0]),
        a=float(chosen.a[0]),
        b=float(chosen.b[0]),
        check_p=p_check,
        check_df=df,
        mixture_p=float(p_first[0]),
    )
    if df < 1:
        why = (
            f"the counts call for the {MODELS[key][3]} (likelihood ratio p = "
            f"{out.mixture_p:.3g}), and with {int(nn.min())} trials per task it cannot be "
            f"checked: run {MODELS[key][2] + 1} or more"
        )
        return replace(out, withheld=why)
    if p_check < ALPHA:
        why = (
            f"the {MODELS[key][3]} does not fit the per-task pass counts (G² p = {p_check:.3g} "
            f"on {df} df), so it cannot be trusted beyond the trials run"
        )
        return replace(out, withheld=why)
    boot = _bootstrap(uc, un, idx, clusters, n_boot, rng, fits)
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
    full: dict[str, Fits],
) -> Fits:
    """The chosen fit of each resample of tasks (or clusters): every model refitted from the
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
    nan = np.full(m1.size, np.nan)
    out = Fits(m1.copy(), nan, nan.copy(), np.zeros(m1.size), 1 - m1)
    if np.any(~flat):
        chosen, _, _ = _choose(_fit_all(uc, un, w[~flat], full))
        for name in FIELDS:
            getattr(out, name)[~flat] = getattr(chosen, name)
    return out
