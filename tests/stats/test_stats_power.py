"""Power and sample size: seed numbers and inverse consistency."""

from __future__ import annotations

import math

import pytest

from harness.stats import (
    cases_needed,
    cases_needed_paired,
    discordant_pairs_needed,
    minimum_detectable_effect,
    minimum_detectable_effect_paired,
    n_for_power,
    sign_test_power,
)


def test_seed_000_unpaired_and_paired() -> None:
    # metrics guide: "unpaired n: 3882", "paired n: 1039" (65% -> 68%, 12% discordance)
    assert cases_needed(0.65, 0.03) == 3882
    assert cases_needed_paired(0.03, 0.12) == 1039
    # the same through the generic formula with the metrics guide's SD(d) values
    assert n_for_power(math.sqrt(0.65 * 0.35 + 0.68 * 0.32), 0.03) == 3882
    assert n_for_power(math.sqrt(0.12 - 0.03**2), 0.03) == 1039
    # metrics guide: SD(d) = 0.667 unpaired and 0.345 paired
    assert round(math.sqrt(0.65 * 0.35 + 0.68 * 0.32), 3) == 0.667
    assert round(math.sqrt(0.12 - 0.03**2), 3) == 0.345


@pytest.mark.parametrize(("lift", "approx"), [(0.02, 4700), (0.05, 680), (0.10, 140)])
def test_seed_001_cases_per_arm_from_85(lift: float, approx: int) -> None:
    # eval-harness guide: from 85%: +2 points ~4,700 per arm, +5 ~680, +10 ~140 (two significant digits)
    n = cases_needed(0.85, lift)
    assert float(f"{n:.2g}") == approx


def test_seed_000_minimum_detectable_effect_on_100_items() -> None:
    # metrics guide: "a 100-item eval can only reliably detect differences of roughly 19 to 20
    # points or more unpaired (80% power)" (the worst case, near 50%)
    mde = minimum_detectable_effect(100, 0.5)
    assert 0.19 <= mde <= 0.20
    assert minimum_detectable_effect(100, 0.85) < mde  # easier near the edges


def test_mde_inverts_cases_needed() -> None:
    for base, n in [(0.65, 3882), (0.5, 100), (0.85, 683)]:
        mde = minimum_detectable_effect(n, base)
        assert cases_needed(base, mde + 1e-9) <= n
        assert cases_needed(base, mde - 1e-4) > n
    assert math.isnan(minimum_detectable_effect(3, 0.9))
    d = minimum_detectable_effect_paired(1039, 0.12)
    assert d == pytest.approx(0.03, abs=2e-4)
    assert cases_needed_paired(d, 0.12) in (1038, 1039, 1040)


def test_paired_needs_fewer_cases() -> None:
    assert cases_needed_paired(0.03, 0.12) < cases_needed(0.65, 0.03) / 3
    with pytest.raises(ValueError):
        cases_needed_paired(0.2, 0.1)  # a lift larger than the discordance is impossible


def test_seed_001_discordant_pairs_needed() -> None:
    # eval-harness guide: "need ~25 discordant at 4-in-5 win rate, ~50 discordant at 7-in-10"
    # (exact two-sided McNemar, 80% power, 5% level)
    at_80 = discordant_pairs_needed(0.8)
    at_70 = discordant_pairs_needed(0.7)
    assert 20 <= at_80 <= 27
    assert 45 <= at_70 <= 55
    assert sign_test_power(at_80, 0.8) >= 0.8
    assert all(sign_test_power(n, 0.8) >= 0.8 for n in range(at_80, at_80 + 40))
    assert sign_test_power(at_80 - 5, 0.8) < 0.8


def test_sign_test_power_against_simulation() -> None:
    import numpy as np

    from harness.stats import mcnemar_exact

    rng = np.random.default_rng(0)
    n, q = 30, 0.75
    wins = rng.binomial(n, q, 4000)
    rejected = [mcnemar_exact(n - w, w, "two-sided") <= 0.05 and w > n / 2 for w in wins]
    assert float(np.mean(rejected)) == pytest.approx(sign_test_power(n, q), abs=0.025)
