"""Design: how many tasks a comparison needs, and what an existing suite can detect.

All use the normal approximation n = ((z_{1−α/2} + z_{power}) · SD(d) / δ)² for a
two-sided test at level α (metrics guide), with exact normal quantiles (1.95996, 0.84162).
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats._util import check_probability, z_quantile


def _z_sum(alpha: float, power: float) -> float:
    check_probability(alpha, "alpha", open_interval=True)
    check_probability(power, "power", open_interval=True)
    return z_quantile(1.0 - alpha / 2.0) + z_quantile(power)


def n_for_power(sd_diff: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Units needed to detect a mean difference ``delta`` whose per-unit SD is ``sd_diff``.

    n = ceil(((z_{1−α/2} + z_power) · sd_diff / delta)²) (metrics guide, two-sided).
    """
    if delta == 0 or sd_diff < 0:
        raise ValueError("need delta != 0 and sd_diff >= 0")
    return math.ceil((_z_sum(alpha, power) * sd_diff / delta) ** 2 - 1e-9)


def cases_needed(base: float, lift: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Cases per arm to detect ``base`` → ``base + lift`` with two independent samples.

    SD(d)² = p₁(1 − p₁) + p₂(1 − p₂) (metrics guide and eval-harness guide). Metrics guide: 65% → 68% needs 3,882 per
    arm; eval-harness guide: from 85%, +2/+5/+10 points need about 4,700 / 680 / 140 per arm.
    Assumes independent cases in each arm (unpaired); pairing usually needs far fewer.
    """
    new = base + lift
    check_probability(base, "base")
    check_probability(new, "base + lift")
    sd = math.sqrt(base * (1 - base) + new * (1 - new))
    return n_for_power(sd, lift, alpha, power)


def cases_needed_paired(
    lift: float, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Paired cases to detect a lift when the arms disagree on a share ``discordance`` of cases.

    For 0/1 outcomes d ∈ {−1, 0, +1}, so SD(d)² = discordance − lift² (metrics guide: a 3-point
    lift with 12% discordance needs 1,039 cases). Estimate the discordance from a pilot run.
    Assumes independent cases.
    """
    check_probability(discordance, "discordance")
    var = discordance - lift * lift
    if var <= 0 or abs(lift) > discordance:
        raise ValueError("need |lift| < discordance")
    return n_for_power(math.sqrt(var), lift, alpha, power)


def minimum_detectable_effect(
    n: float, base: float, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest lift above ``base`` an unpaired comparison with n cases per arm can detect.

    Solves n = (z_sum)² · (p₁q₁ + p₂q₂) / δ² for δ > 0 (the inverse of ``cases_needed``, as a
    continuous n). Returns ``nan`` if even the largest possible lift (to 100%) is undetectable.
    Metrics guide: a 100-item eval detects only about 19 to 20 points near 50%.
    """
    if n <= 0:
        raise ValueError("n must be positive")
    z2 = _z_sum(alpha, power) ** 2
    check_probability(base, "base")

    def gap(delta: float) -> float:
        p2 = base + delta
        return n * delta * delta - z2 * (base * (1 - base) + p2 * (1 - p2))

    hi = 1.0 - base
    if hi <= 0 or gap(hi) < 0:
        return math.nan
    lo = 0.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if gap(mid) >= 0:
            hi = mid
        else:
            lo = mid
    return hi


def minimum_detectable_effect_paired(
    n: float, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest lift a paired comparison on n cases can detect at a given discordance.

    Solves n = z_sum² (D − δ²)/δ², so δ = z_sum · sqrt(D / (n + z_sum²)) (metrics guide).
    """
    if n <= 0:
        raise ValueError("n must be positive")
    check_probability(discordance, "discordance")
    z = _z_sum(alpha, power)
    return z * math.sqrt(discordance / (n + z * z))


def sign_test_power(n: int, win_rate: float, alpha: float = 0.05) -> float:
    """Power of the exact two-sided sign test on n discordant pairs when the new arm wins
    each with probability ``win_rate`` (> 1/2): P(reject in the right direction)."""
    from scipy.special import bdtrc  # bdtrc(k, n, p) = P(X > k)

    if n < 1:
        return 0.0
    xs = np.arange(1, n + 1)
    tail = bdtrc(xs - 1, n, 0.5)  # P(X >= x) under the null
    ok = xs[2.0 * tail <= alpha]
    if ok.size == 0:
        return 0.0
    return float(bdtrc(ok[0] - 1, n, win_rate))


def discordant_pairs_needed(
    win_rate: float, alpha: float = 0.05, power: float = 0.8, max_n: int = 100_000
) -> int:
    """Discordant pairs an exact two-sided McNemar test needs at a given win rate (eval-harness guide).

    The exact test's power saw-tooths in n, so this returns the smallest n from which the
    power stays at or above the target for every larger n checked (up to 2n + 50). Eval-harness guide:
    about 25 at a 4-in-5 win rate and about 50 at 7-in-10.
    """
    if not 0.5 < win_rate < 1.0:
        raise ValueError("win_rate must lie in (0.5, 1)")
    n = 1
    while n <= max_n:
        if sign_test_power(n, win_rate, alpha) >= power:
            horizon = range(n + 1, 2 * n + 51)
            bad = [m for m in horizon if sign_test_power(m, win_rate, alpha) < power]
            if not bad:
                return n
            n = bad[-1] + 1
            continue
        n += 1
    raise ValueError("no sample size up to max_n reaches the requested power")
