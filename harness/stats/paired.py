"""Comparing two arms: exact McNemar / sign tests and the paired normal-approximation test."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats._util import as_1d_float, normal_sf, z_two_sided

_ALTERNATIVES = ("greater", "less", "two-sided")


def _binom_half_sf(x: int, n: int) -> float:
    """P(X >= x) for X ~ Binomial(n, 1/2)."""
    if x <= 0:
        return 1.0
    if x > n:
        return 0.0
    from scipy.special import bdtrc  # P(X > k), the binomial upper tail as a plain ufunc

    return float(bdtrc(x - 1, n, 0.5))


def sign_test_tails(positive: np.ndarray, negative: np.ndarray) -> dict[str, np.ndarray]:
    """Exact sign-test p-values for many samples at once: ``positive`` and ``negative`` count
    the tasks whose difference is above / below 0 (ties dropped). Returns the "greater",
    "less" and "two-sided" p-values elementwise, equal to ``sign_test`` (and, for 0/1
    outcomes, to ``mcnemar_exact``)."""
    from scipy.special import bdtrc

    pos = np.asarray(positive, dtype=np.int64)
    neg = np.asarray(negative, dtype=np.int64)
    n = pos + neg

    def upper(x: np.ndarray) -> np.ndarray:  # P(X >= x), X ~ Binomial(n, 1/2)
        tail = np.where(n > 0, bdtrc(np.maximum(x - 1, 0), np.maximum(n, 1), 0.5), 1.0)
        return np.where(x <= 0, 1.0, np.where(x > n, 0.0, tail))

    greater, less = upper(pos), upper(neg)
    return {
        "greater": greater,
        "less": less,
        "two-sided": np.minimum(1.0, 2.0 * np.minimum(greater, less)),
    }


def _exact_binomial_half(successes: int, n: int, alternative: str) -> float:
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}")
    if n == 0:
        return 1.0
    if alternative == "greater":
        return _binom_half_sf(successes, n)
    if alternative == "less":
        return _binom_half_sf(n - successes, n)
    # Two-sided at p = 1/2: the distribution is symmetric, so the "probabilities no larger
    # than the observed one" rule equals twice the smaller tail, capped at 1.
    tail = min(_binom_half_sf(successes, n), _binom_half_sf(n - successes, n))
    return min(1.0, 2.0 * tail)


def mcnemar_exact(broke: int, fixed: int, alternative: str = "greater") -> float:
    """Exact McNemar test: a binomial(b + c, 1/2) sign test on the discordant pairs.

    Estimand: whether the new arm is better on the cases where the two arms disagree.
    ``broke`` = old passed and new failed, ``fixed`` = old failed and new passed (eval-harness guide).
    ``alternative="greater"`` (default) is the one-sided P(X >= fixed) that the new arm is
    better; ``"less"`` the opposite; ``"two-sided"`` twice the smaller tail, capped at 1.
    Agreements carry no information and are ignored. Eval-harness guide: 5 fixed / 0 broke gives
    p = 0.031, 8 fixed / 3 broke gives 0.113. Assumes independent cases (tasks).
    """
    if broke < 0 or fixed < 0 or int(broke) != broke or int(fixed) != fixed:
        raise ValueError("broke and fixed must be non-negative integers")
    return _exact_binomial_half(int(fixed), int(broke) + int(fixed), alternative)


def discordant_counts(old: object, new: object) -> tuple[int, int]:
    """(broke, fixed) from two aligned 0/1 outcome vectors (old, new) on the same cases."""
    a = np.asarray(old).astype(bool)
    b = np.asarray(new).astype(bool)
    if a.shape != b.shape:
        raise ValueError("old and new must be aligned on the same cases")
    return int(np.count_nonzero(a & ~b)), int(np.count_nonzero(~a & b))


def sign_test(diffs: object, alternative: str = "two-sided") -> float:
    """Exact sign test on paired differences; zeros are dropped.

    Estimand: whether positive differences are more (``"greater"``), fewer (``"less"``) or
    differently (``"two-sided"``) frequent than negative ones, i.e. median difference 0.
    On 0/1 outcomes ``sign_test(new - old, "greater")`` equals ``mcnemar_exact`` (eval-harness guide).
    """
    d = as_1d_float(diffs, "diffs")
    pos = int(np.count_nonzero(d > 0))
    neg = int(np.count_nonzero(d < 0))
    return _exact_binomial_half(pos, pos + neg, alternative)


@dataclass(frozen=True)
class PairedDifference:
    """A paired difference with its normal-approximation SE, interval and p-value."""

    estimate: float
    se: float
    ci: tuple[float, float]
    p_value: float
    n: int
    """Number of pairs (or of scores)."""
    confidence: float


def paired_difference(
    a: object,
    b: object,
    confidence: float = 0.95,
    *,
    clusters: object | None = None,
) -> PairedDifference:
    """Mean of per-question differences a − b with a normal-approximation interval.

    Estimand: mean(a) − mean(b) over questions scored by both arms (metrics guide, "the right way":
    d_i = a_i − b_i, SE = SD(d)/sqrt(n), CI = d̄ ± z·SE, two-sided p = 2(1 − Φ(|d̄|/SE))).
    Metrics guide: 500 questions with 40 A-only and 22 B-only wins give 0.036, SE 0.0157,
    CI (0.005, 0.067), p = 0.022. With ``clusters`` the SE is the clustered SE of the
    differences (with the sqrt(C/(C−1)) correction), for questions that share a cluster.
    Assumes independent pairs (or clusters) and enough of them for the normal approximation;
    p is NaN when every difference is identical.
    """
    from harness.stats.clustered import clustered_se

    x = as_1d_float(a, "a")
    y = as_1d_float(b, "b")
    if x.shape != y.shape or x.size < 2:
        raise ValueError("a and b must be aligned and hold at least two pairs")
    d = x - y
    est = float(d.mean())
    se = clustered_se(d, clusters, small_sample=True)
    z = z_two_sided(confidence)
    p = 2.0 * normal_sf(abs(est) / se) if se > 0 else math.nan
    return PairedDifference(
        estimate=est,
        se=se,
        ci=(est - z * se, est + z * se),
        p_value=p,
        n=int(d.size),
        confidence=confidence,
    )


def unpaired_difference(
    successes_a: float, n_a: float, successes_b: float, n_b: float, confidence: float = 0.95
) -> PairedDifference:
    """Difference of two independent rates p̂_a − p̂_b with SE sqrt(SE_a² + SE_b²).

    The "wrong way" of the metrics guide when both arms ran the same questions (it ignores the
    pairing): 340/500 vs 322/500 gives SE 2.99 points and CI [−2.3, +9.5]. Correct only for
    genuinely independent samples. p uses the same unpooled SE.
    """
    pa, pb = successes_a / n_a, successes_b / n_b
    se = math.sqrt(pa * (1 - pa) / n_a + pb * (1 - pb) / n_b)
    est = pa - pb
    z = z_two_sided(confidence)
    p = 2.0 * normal_sf(abs(est) / se) if se > 0 else math.nan
    return PairedDifference(est, se, (est - z * se, est + z * se), p, int(n_a + n_b), confidence)


def two_proportion_z_test(successes_a: int, n_a: int, successes_b: int, n_b: int) -> float:
    """Two-sided pooled two-proportion z-test p-value for independent samples.

    Eval-harness guide: 42/50 vs 47/50 gives p = 0.11 (the unpaired test that pairing beats).
    """
    pooled = (successes_a + successes_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 1.0
    z = (successes_a / n_a - successes_b / n_b) / se
    return 2.0 * normal_sf(abs(z))
