"""The cluster-robust computations of a weighted mean, for one sample or thousands at once.

A ``ClusterDesign`` holds what does not depend on the values: each task's cluster, the task
weights, each cluster's CR2 leverage factor and the constant parts of the Imbens–Kolesár
degrees of freedom. Its methods take values as a (samples × tasks) array, so the report
reading one run and a simulation reading ten thousand planted runs go through the same code
(``benchmarks/coverage.py`` measures these functions, not copies of them).

Formulas (docs/statistics.md, "Intervals for a rate or a mean"):

- CR2 variance of the weighted mean x̄ = Σ w_i x_i / W: Σ_c S_c² / (1 − W_c/W) / W², with
  S_c = Σ_{i∈c} w_i (x_i − x̄) (Bell and McCaffrey 2002; for a mean the cluster's leverage is
  its weight share W_c/W).
- Degrees of freedom: Satterthwaite's for that variance under the Imbens–Kolesár (2016)
  working model, tasks equicorrelated within clusters at the one-way ANOVA intra-cluster
  correlation ρ: df = tr(DQ)²/tr((DQ)²), Q = (1 − ρ)R'R + ρ(U'R)'(U'R); both traces are
  quadratic in ρ, so each sample's df costs a few multiplications.
- Leave-one-cluster-out means (the cluster jackknife, CR3) and the skewness of the cluster
  contributions S_c/W (Hall 1992), for the skew-robust bounds of ``harness.stats.estimate``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DENSE_LIMIT = 4_000_000
"""Largest clusters² matrix the df computation builds; past it t on C − 1 df is used (by then
t is all but normal)."""


@dataclass(frozen=True)
class ClusterDesign:
    """Clusters and weights of one set of tasks; values come per call as (samples × tasks)."""

    codes: np.ndarray
    """Cluster code 0..G−1 of each task."""
    weights: np.ndarray
    order: np.ndarray
    """Task indices sorted by cluster (``np.add.reduceat`` sums clusters in this order)."""
    starts: np.ndarray
    n_clusters: int
    sizes: np.ndarray
    """Tasks per cluster."""
    wc: np.ndarray
    """Weight per cluster, W_c."""
    total: float
    leverage: np.ndarray
    """CR2 factor 1/(1 − W_c/W) per cluster."""
    df_terms: tuple[float, float, float, float, float] | None
    """(tr A, tr B, tr A², tr AB, tr B²) of the df formula, None past ``DENSE_LIMIT``."""
    in_order: bool = False
    """Tasks already sorted by cluster (no reordering copy needed)."""
    unit_weights: bool = False

    @classmethod
    def of(cls, codes: np.ndarray, weights: np.ndarray | None = None) -> ClusterDesign:
        """The design of tasks with cluster ``codes`` (0..G−1, every code used) and weights."""
        codes = np.asarray(codes, dtype=np.intp)
        n = codes.size
        w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
        g = int(codes.max()) + 1 if n else 0
        order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes, minlength=g)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
        wc = np.bincount(codes, weights=w, minlength=g)
        total = float(w.sum())
        leverage = 1.0 / np.maximum(1.0 - wc / total, 1e-12)
        return cls(
            codes=codes,
            weights=w,
            order=order,
            starts=starts,
            n_clusters=g,
            sizes=sizes,
            wc=wc,
            total=total,
            leverage=leverage,
            df_terms=_df_terms(w, codes, wc, total, leverage, g),
            in_order=bool(np.all(order == np.arange(n))),
            unit_weights=bool(np.all(w == 1.0)),
        )

    @property
    def n(self) -> int:
        return int(self.codes.size)

    def cluster_sums(self, x: np.ndarray) -> np.ndarray:
        """Σ_{i∈c} x_i per cluster, for each sample: (samples × tasks) → (samples × G)."""
        return np.add.reduceat(x if self.in_order else x[:, self.order], self.starts, axis=1)

    def mean(self, x: np.ndarray) -> np.ndarray:
        """Weighted mean of each sample."""
        return np.asarray(x @ self.weights, dtype=float) / self.total

    def contributions(self, x: np.ndarray, mean: np.ndarray) -> np.ndarray:
        """S_c / W per cluster: the cluster's share of the deviation of the mean."""
        dev = x - mean[:, None]
        return self.cluster_sums(dev if self.unit_weights else self.weights * dev) / self.total

    def cr2(self, x: np.ndarray, with_df: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, CR2 standard error, Imbens–Kolesár df) of each sample (rows of ``x``); the df
        are NaN when ``with_df`` is off (they cost the most)."""
        mean = self.mean(x)
        u = self.contributions(x, mean)
        se = np.sqrt(np.maximum((u * u) @ self.leverage, 0.0))
        return mean, se, self.df(x) if with_df else np.full(mean.shape, np.nan)

    def covariance(self, xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
        """CR2 covariance of the two samples' means (same tasks, same leverage)."""
        ua = self.contributions(xa, self.mean(xa))
        ub = self.contributions(xb, self.mean(xb))
        return np.asarray((ua * ub) @ self.leverage, dtype=float)

    def icc(self, x: np.ndarray) -> np.ndarray:
        """One-way ANOVA intra-cluster correlation of each sample, clipped to [0, 1]."""
        g, n = self.n_clusters, self.n
        out = np.zeros(x.shape[0])
        if g < 2 or n <= g:
            return out
        m = self.sizes.astype(float)
        means = self.cluster_sums(x) / m
        grand = x.mean(axis=1)
        msb = ((means - grand[:, None]) ** 2) @ m / (g - 1)
        msw = np.sum((x - means[:, self.codes]) ** 2, axis=1) / (n - g)
        m0 = (n - float(np.dot(m, m)) / n) / (g - 1)
        den = msb + (m0 - 1.0) * msw
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.where(den > 0, (msb - msw) / np.where(den > 0, den, 1.0), 1.0)
        return np.clip(rho, 0.0, 1.0)

    def df(self, x: np.ndarray) -> np.ndarray:
        """Imbens–Kolesár degrees of freedom of each sample's CR2 variance."""
        g = self.n_clusters
        if self.df_terms is None or g < 2:
            return np.full(x.shape[0], float(max(g - 1, 1)))
        rho = self.icc(x) if g < self.n else np.zeros(x.shape[0])
        ta, tb, taa, tab, tbb = self.df_terms
        tr1 = (1 - rho) * ta + rho * tb
        tr2 = (1 - rho) ** 2 * taa + 2 * rho * (1 - rho) * tab + rho**2 * tbb
        with np.errstate(invalid="ignore", divide="ignore"):
            df = np.where(tr2 > 0, tr1 * tr1 / np.where(tr2 > 0, tr2, 1.0), g - 1.0)
        return np.clip(df, 1.0, g - 1.0)

    def leave_one_out(self, x: np.ndarray) -> np.ndarray:
        """The weighted mean without each cluster in turn: (samples × G)."""
        sums = self.cluster_sums(x if self.unit_weights else self.weights * x)
        out = (sums.sum(axis=1, keepdims=True) - sums) / np.maximum(self.total - self.wc, 1e-300)
        return np.asarray(out, dtype=float)

    def skewness(self, x: np.ndarray, mean: np.ndarray) -> np.ndarray:
        """Σ u_c³ / (Σ u_c²)^{3/2} of the cluster contributions u_c: the skewness of the mean
        in units of its own spread (γ/√G for G equal clusters of skewness γ)."""
        u = self.contributions(x, mean)
        s2 = np.sum(u * u, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            k = np.where(s2 > 0, np.sum(u**3, axis=1) / np.where(s2 > 0, s2, 1.0) ** 1.5, 0.0)
        return k


def _df_terms(
    w: np.ndarray,
    codes: np.ndarray,
    wc: np.ndarray,
    total: float,
    leverage: np.ndarray,
    g: int,
) -> tuple[float, float, float, float, float] | None:
    """The ρ-free traces of the df formula: A = D R'R, B = D (U'R)'(U'R), D = diag(leverage),
    R = P'U_w (P centres the values on the weighted mean, U_w[i, c] = w_i for task i in c)."""
    if g < 2 or g * g > DENSE_LIMIT:
        return None
    s2 = np.bincount(codes, weights=w * w, minlength=g)
    rr = np.diag(s2) - (np.outer(s2, wc) + np.outer(wc, s2)) / total
    rr += float(np.dot(w, w)) * np.outer(wc, wc) / (total * total)
    ur = np.diag(wc) - np.outer(wc, wc) / total
    a = leverage[:, None] * rr
    b = leverage[:, None] * (ur.T @ ur)
    return (
        float(np.trace(a)),
        float(np.trace(b)),
        float(np.sum(a * a.T)),
        float(np.sum(a * b.T)),
        float(np.sum(b * b.T)),
    )
