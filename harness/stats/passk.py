"""Unbiased per-task pass@k (at least one of k succeeds) and pass^k (all k succeed).

Both reduce to one quantity, the chance that k trials drawn without replacement from n
contain none of x marked trials:

    R(n, x, k) = C(n − x, k) / C(n, k) = ∏_{j<k} (1 − x/(n − j)) = ∏_{j<x} (1 − k/(n − j))

pass@k = 1 − R(n, c, k) (Chen et al. 2021) and pass^k = R(n, n − c, k) = C(c, k)/C(n, k)
(Yao et al. 2024). The shorter of the two products is evaluated as a sum of ``log1p`` terms,
so no binomial coefficient is ever formed and the result is exact to a few ulps for n in the
hundreds of thousands.
"""

from __future__ import annotations

import numpy as np

# Elements whose shorter product has at most this many factors go through one padded,
# vectorized pass; longer ones are summed one element at a time (still vectorized inside).
_PAD_LIMIT = 256


def _as_int_array(values: object, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold whole numbers")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must be integer, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _log_none_marked(n: np.ndarray, x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log R(n, x, k) for 1-D int arrays with 0 <= x <= n, 0 <= k <= n, n − x >= k."""
    m = np.minimum(x, k)
    other = np.maximum(x, k).astype(float)
    out = np.zeros(n.shape, dtype=float)
    small = m <= _PAD_LIMIT
    if np.any(small):
        idx = np.flatnonzero(small)
        width = int(m[idx].max()) if idx.size else 0
        if width > 0:
            j = np.arange(width, dtype=float)
            denom = n[idx, None].astype(float) - j[None, :]
            mask = j[None, :] < m[idx, None]
            denom = np.where(mask, denom, 1.0)
            numer = np.where(mask, denom - other[idx, None], 1.0)
            out[idx] = _log_factors(numer, denom).sum(axis=1)
    for i in np.flatnonzero(~small):
        denom = float(n[i]) - np.arange(m[i], dtype=float)
        out[i] = _log_factors(denom - other[i], denom).sum()
    return out


def _log_factors(numer: np.ndarray, denom: np.ndarray) -> np.ndarray:
    """log(numer/denom) for 0 < numer <= denom, accurate both near 1 and near 0.

    Near 1 use log1p of the (exact, integer-valued) complement; elsewhere the plain log of the
    ratio, which avoids log1p's loss of precision close to −1.
    """
    ratio = numer / denom
    out: np.ndarray = np.where(ratio > 0.5, np.log1p(-(denom - numer) / denom), np.log(ratio))
    return out


def _prepare(n: object, c: object, k: object) -> tuple[np.ndarray, ...]:
    n_arr, c_arr, k_arr = np.broadcast_arrays(
        _as_int_array(n, "n"), _as_int_array(c, "c"), _as_int_array(k, "k")
    )
    if np.any(n_arr < 0) or np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("need 0 <= c <= n")
    if np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ValueError("need 0 <= k <= n: the unbiased estimators require n >= k trials")
    return n_arr, c_arr, k_arr


def _none_marked(n: np.ndarray, x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """R(n, x, k) elementwise; exactly 0 when fewer than k unmarked trials exist."""
    shape = n.shape
    n1, x1, k1 = n.ravel(), x.ravel(), k.ravel()
    out = np.zeros(n1.shape, dtype=float)
    possible = (n1 - x1) >= k1
    if np.any(possible):
        out[possible] = np.exp(_log_none_marked(n1[possible], x1[possible], k1[possible]))
    return out.reshape(shape)


def _finish(values: np.ndarray) -> float | np.ndarray:
    return float(values) if values.ndim == 0 else values


def pass_at_k(n: object, c: object, k: object) -> float | np.ndarray:
    """Unbiased pass@k of one task: 1 − C(n − c, k)/C(n, k).

    Estimand: the probability that at least one of k independent trials of the task succeeds
    (Chen et al. 2021; metrics guide and estimands guide). ``n`` trials were run and ``c`` passed; needs n >= k.
    Assumes the n trials are i.i.d. draws for this task. Average it over tasks for a benchmark
    score and resample tasks (or clusters) for its interval. Elementwise over arrays
    (broadcast); returns a float for scalar input.
    """
    n_arr, c_arr, k_arr = _prepare(n, c, k)
    shape = n_arr.shape
    n1, c1, k1 = n_arr.ravel(), c_arr.ravel(), k_arr.ravel()
    out = np.ones(n1.shape, dtype=float)
    possible = (n1 - c1) >= k1
    if np.any(possible):
        log_r = _log_none_marked(n1[possible], c1[possible], k1[possible])
        out[possible] = -np.expm1(log_r) + 0.0  # + 0.0 turns -0.0 into 0.0
    return _finish(out.reshape(shape))


def pass_hat_k(n: object, c: object, k: object) -> float | np.ndarray:
    """Unbiased pass^k of one task: C(c, k)/C(n, k).

    Estimand: the probability that all k independent trials of the task succeed (Yao et al.
    2024, τ-bench; metrics guide and agent-evaluation guide). ``n`` trials were run and ``c`` passed; needs n >= k.
    Assumes i.i.d. trials within the task (fresh, recorded seeds per trial, agent-evaluation guide).
    The plug-in (c/n)^k overstates reliability. Elementwise over arrays.
    """
    n_arr, c_arr, k_arr = _prepare(n, c, k)
    return _finish(_none_marked(n_arr, n_arr - c_arr, k_arr))


def plugin_pass_at_k(p: object, k: object) -> float | np.ndarray:
    """Plug-in pass@k = 1 − (1 − p)^k for a known per-trial rate p (biased low if p = c/n)."""
    p_arr = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -np.expm1(np.asarray(k, dtype=float) * np.log1p(-np.minimum(p_arr, 1.0)))
    out = np.where(p_arr >= 1.0, 1.0, out)
    return _finish(np.asarray(out))


def plugin_pass_hat_k(p: object, k: object) -> float | np.ndarray:
    """Plug-in pass^k = p^k for a known per-trial rate p (biased high if p = c/n)."""
    return _finish(np.asarray(np.power(np.asarray(p, dtype=float), np.asarray(k, dtype=float))))


def mean_pass_at_k(n: object, c: object, k: int) -> float:
    """Benchmark pass@k: the mean over tasks of the unbiased per-task pass@k (metrics guide)."""
    return float(np.mean(pass_at_k(n, c, k)))


def mean_pass_hat_k(n: object, c: object, k: int) -> float:
    """Benchmark pass^k: the mean over tasks of the unbiased per-task pass^k (metrics guide)."""
    return float(np.mean(pass_hat_k(n, c, k)))
