"""Agreement between a judge and people, or among people: Cohen's κ and Krippendorff's α.

Accuracy, sensitivity, specificity, precision and F1 of a judge against human labels are
the classification metrics (``harness.stats.classification``); this module adds the
chance-corrected agreements (metrics guide: measure judges against people; Cohen 1960;
Krippendorff 2011). Formulas: docs/statistics.md, "Judges: agreement with people".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats._util import RngLike, as_rng, z_two_sided
from harness.stats.bootstrap import percentile_interval


@dataclass(frozen=True)
class Agreement:
    """A chance-corrected agreement with its interval and how many units it rests on."""

    estimate: float
    lo: float
    hi: float
    n: int
    """Units (trials) it was computed over."""
    method: str


def cohen_kappa(a: object, b: object, confidence: float = 0.95) -> Agreement:
    """Cohen's κ = (p_o − p_e)/(1 − p_e) between two raters of the same units.

    Estimand: agreement beyond chance between the two raters' labels (Cohen 1960), p_o the
    observed share of agreeing units and p_e = Σ_k p_a(k)·p_b(k) the agreement expected from
    the raters' marginal shares. Interval: κ ± z·SE with the large-sample standard error of
    Fleiss, Cohen & Everitt (1969), clipped to [−1, 1]. Assumes independent units.
    """
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError("a and b must be non-empty 1-D arrays of one length")
    cats, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
    k, n = cats.size, x.size
    table = np.zeros((k, k))
    np.add.at(table, (codes[:n], codes[n:]), 1.0)
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    po, pe = float(np.trace(p)), float(rows @ cols)
    if pe >= 1.0:
        # Both raters gave one label throughout: agreement is total and chance explains it.
        return Agreement(1.0 if po == 1.0 else 0.0, -1.0, 1.0, n, "Cohen's kappa (no variation)")
    kappa = (po - pe) / (1.0 - pe)
    se = _fleiss_se(p, rows, cols, kappa, pe, n)
    z = z_two_sided(confidence)
    lo, hi = max(-1.0, kappa - z * se), min(1.0, kappa + z * se)
    return Agreement(kappa, lo, hi, n, "Cohen's kappa, Fleiss–Cohen–Everitt standard error")


def _fleiss_se(
    p: np.ndarray, rows: np.ndarray, cols: np.ndarray, kappa: float, pe: float, n: int
) -> float:
    """The large-sample SE of κ (Fleiss, Cohen & Everitt 1969, eq. 13)."""
    diag = np.diag(p)
    a = float(np.sum(diag * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2))
    off = p * (rows[None, :] + cols[:, None]) ** 2
    np.fill_diagonal(off, 0.0)
    b = (1.0 - kappa) ** 2 * float(off.sum())
    c = (kappa - pe * (1.0 - kappa)) ** 2
    var = max(a + b - c, 0.0) / ((1.0 - pe) ** 2 * n)
    return float(np.sqrt(var))


def _alpha(values: np.ndarray) -> tuple[float, int]:
    """Nominal α of a (units × raters) array of category codes, −1 for missing."""
    k = int(values.max()) + 1 if values.size else 0
    counts = np.zeros((values.shape[0], max(k, 1)))
    for r in range(values.shape[1]):
        col = values[:, r]
        ok = col >= 0
        np.add.at(counts, (np.nonzero(ok)[0], col[ok]), 1.0)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    total = float(m.sum())
    if total == 0:
        return float("nan"), 0
    # Coincidences: o_ck = Σ_u n_uc (n_uk − [c = k]) / (m_u − 1)
    coincide = (counts[:, :, None] * counts[:, None, :]) / (m - 1.0)[:, None, None]
    coincide -= np.einsum("uc,ck->uck", counts / (m - 1.0)[:, None], np.eye(counts.shape[1]))
    o = coincide.sum(axis=0)
    nc = o.sum(axis=1)
    expected = total**2 - float(np.sum(nc**2))
    units = int(pairable.sum())
    if expected == 0:
        return float("nan"), units  # one category throughout: no disagreement to expect
    return 1.0 - (total - 1.0) * (total - float(np.trace(o))) / expected, units


def krippendorff_alpha(
    labels: object,
    confidence: float = 0.95,
    *,
    n_resamples: int = 2000,
    rng: RngLike = 0,
) -> Agreement:
    """Krippendorff's α for nominal labels from several raters, some units unlabelled.

    Estimand: 1 − D_o/D_e, observed over expected disagreement among raters (Krippendorff
    2011, nominal metric): from the coincidence matrix o_ck = Σ_u n_uc(n_uk − [c=k])/(m_u − 1)
    over units with m_u ≥ 2 labels, n_c = Σ_k o_ck and n = Σ_c n_c,
    α = 1 − (n − 1)(n − Σ_c o_cc)/(n² − Σ_c n_c²). ``labels``: units × raters, None or NaN
    where a rater did not label a unit. Interval: percentiles of α over units resampled
    with replacement (seeded). Assumes units are independent.
    """
    arr = np.asarray(labels, dtype=object)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError("labels must be a (units x raters) table")
    missing = np.vectorize(lambda v: v is None or (isinstance(v, float) and np.isnan(v)))(arr)
    present = sorted({str(v) for v in arr[~missing]})
    lookup = {v: i for i, v in enumerate(present)}
    codes = np.full(arr.shape, -1, dtype=np.intp)
    for (u, r), v in np.ndenumerate(arr):
        if not missing[u, r]:
            codes[u, r] = lookup[str(v)]
    alpha, units = _alpha(codes)
    if units == 0:
        raise ValueError("no unit has labels from two raters: agreement is undefined")
    gen = as_rng(rng)
    reps = []
    for _ in range(n_resamples):
        rows = gen.integers(0, len(codes), len(codes))
        value, _n = _alpha(codes[rows])
        if np.isfinite(value):
            reps.append(value)
    lo, hi = percentile_interval(np.array(reps), confidence) if reps else (-1.0, 1.0)
    return Agreement(
        alpha,
        min(lo, alpha),
        max(hi, alpha),
        units,
        "Krippendorff's alpha (nominal), unit bootstrap",
    )
