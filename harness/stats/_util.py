"""Small shared helpers: argument checks, normal quantiles, random generators.

Private to ``harness.stats``; nothing here is part of the public API.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

_STD_NORMAL = NormalDist()

RngLike = np.random.Generator | int | None


def as_rng(rng: RngLike) -> np.random.Generator:
    """Return a numpy Generator: pass one through, or seed a new one from an int or None."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def z_two_sided(confidence: float) -> float:
    """Standard normal quantile z with P(|Z| <= z) = confidence (1.95996... at 0.95)."""
    check_probability(confidence, "confidence", open_interval=True)
    return _STD_NORMAL.inv_cdf(0.5 + confidence / 2.0)


def z_quantile(q: float) -> float:
    """Standard normal quantile at q (0 < q < 1)."""
    check_probability(q, "quantile", open_interval=True)
    return _STD_NORMAL.inv_cdf(q)


def normal_sf(x: float) -> float:
    """Upper tail P(Z > x) of the standard normal."""
    return 1.0 - _STD_NORMAL.cdf(x) if x < 0 else _STD_NORMAL.cdf(-x)


def check_probability(value: float, name: str, *, open_interval: bool = False) -> None:
    """Raise ValueError unless 0 <= value <= 1 (or 0 < value < 1 when open_interval)."""
    ok = 0.0 < value < 1.0 if open_interval else 0.0 <= value <= 1.0
    if not ok:
        bounds = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {bounds}, got {value!r}")


def as_1d_float(values: object, name: str) -> np.ndarray:
    """Convert to a 1-D float array, rejecting other shapes and non-finite values."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def encode_labels(labels: object) -> tuple[np.ndarray, np.ndarray]:
    """Map arbitrary hashable labels to integer codes 0..G-1.

    Returns ``(uniques, codes)`` with ``uniques[codes] == labels``; uniques are sorted.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {arr.shape}")
    uniques, codes = np.unique(arr, return_inverse=True)
    return uniques, codes.astype(np.intp, copy=False)
