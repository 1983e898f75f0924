"""Paired comparisons, exact McNemar, sign test and multiple-comparison adjustments."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats import (
    benjamini_hochberg,
    discordant_counts,
    familywise_error_rate,
    holm_adjust,
    mcnemar_exact,
    paired_difference,
    sign_test,
    two_proportion_z_test,
    unpaired_difference,
)


def test_seed_001_mcnemar_branches() -> None:
    # eval-harness guide: branch A fixed 5, broke 0 -> p = 0.031; branch B fixed 8, broke 3 -> 0.113
    assert round(mcnemar_exact(broke=0, fixed=5), 3) == 0.031
    assert mcnemar_exact(0, 5) == pytest.approx(1 / 32)
    assert round(mcnemar_exact(broke=3, fixed=8), 3) == 0.113
    assert mcnemar_exact(3, 8) == pytest.approx(232 / 2048)
    # eval-harness guide: a three-nil move in a class is p = 0.125
    assert mcnemar_exact(0, 3) == pytest.approx(0.125)
    assert mcnemar_exact(0, 0) == 1.0


def test_seed_001_unpaired_test_misses_both_branches() -> None:
    # eval-harness guide: "the unpaired two-proportion test gives p = 0.11 for both branches"
    assert round(two_proportion_z_test(42, 50, 47, 50), 2) == 0.11


def test_seed_001_tables_give_discordant_counts() -> None:
    # eval-harness guide branch B: 39 pass/pass, 3 pass/fail, 8 fail/pass, 0 fail/fail
    old = np.array([1] * 39 + [1] * 3 + [0] * 8)
    new = np.array([1] * 39 + [0] * 3 + [1] * 8)
    assert discordant_counts(old, new) == (3, 8)
    assert sign_test(new - old, "greater") == pytest.approx(mcnemar_exact(3, 8))


def _seed_000_pairs() -> tuple[np.ndarray, np.ndarray]:
    # metrics guide: 500 questions: both right 300, A only 40, B only 22, neither 138
    a = np.array([1] * 300 + [1] * 40 + [0] * 22 + [0] * 138, dtype=float)
    b = np.array([1] * 300 + [0] * 40 + [1] * 22 + [0] * 138, dtype=float)
    return a, b


def test_seed_000_paired_difference() -> None:
    # metrics guide: "paired: diff=0.036 se=0.0157 CI=(0.005, 0.067) p=0.022"; SD(d) = 0.351
    a, b = _seed_000_pairs()
    res = paired_difference(a, b)
    assert round(res.estimate, 3) == 0.036
    assert round(res.se, 4) == 0.0157
    assert (round(res.ci[0], 3), round(res.ci[1], 3)) == (0.005, 0.067)
    assert round(res.p_value, 3) == 0.022
    assert round(float(np.std(a - b, ddof=1)), 3) == 0.351
    # metrics guide: exact McNemar on the 40 vs 22 discordant pairs gives p about 0.030
    assert round(mcnemar_exact(broke=22, fixed=40, alternative="two-sided"), 3) == 0.030


def test_seed_000_unpaired_comparison_is_wrong_way() -> None:
    # metrics guide: independent SEs: difference 3.6 points, SE 2.99, CI [-2.3, +9.5]
    res = unpaired_difference(340, 500, 322, 500)
    assert round(100 * res.estimate, 1) == 3.6
    assert round(100 * res.se, 2) == 2.99
    assert (round(100 * res.ci[0], 1), round(100 * res.ci[1], 1)) == (-2.3, 9.5)
    assert res.ci[0] < 0 < paired_difference(*_seed_000_pairs()).ci[0]


def test_mcnemar_matches_statsmodels_and_scipy() -> None:
    from scipy.stats import binomtest
    from statsmodels.stats.contingency_tables import mcnemar

    for broke, fixed in [(0, 5), (3, 8), (22, 40), (10, 10), (1, 0), (7, 2), (30, 45)]:
        table = [[50, broke], [fixed, 50]]
        ref = mcnemar(table, exact=True).pvalue
        assert mcnemar_exact(broke, fixed, "two-sided") == pytest.approx(ref, rel=1e-10)
        n = broke + fixed
        for alt in ("greater", "less", "two-sided"):
            expected = binomtest(fixed, n, 0.5, alternative=alt).pvalue
            assert mcnemar_exact(broke, fixed, alt) == pytest.approx(expected, rel=1e-10)


def test_sign_test_drops_ties() -> None:
    from scipy.stats import binomtest

    d = np.array([0.5, 0.2, -0.1, 0.0, 0.0, 0.3, 0.9, -0.4, 0.1, 0.2])
    assert sign_test(d, "greater") == pytest.approx(binomtest(6, 8, alternative="greater").pvalue)
    assert sign_test(d) == pytest.approx(binomtest(6, 8).pvalue)
    with pytest.raises(ValueError):
        sign_test(d, "bigger")


def test_paired_difference_with_clusters_is_wider() -> None:
    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(20), 10)
    shift = rng.normal(0, 0.3, 20)[clusters]
    a = rng.random(200) + shift
    b = a - 0.05 + rng.normal(0, 0.05, 200) + 0.5 * shift
    plain = paired_difference(a, b)
    clus = paired_difference(a, b, clusters=clusters)
    assert clus.estimate == pytest.approx(plain.estimate)
    assert clus.se > 1.5 * plain.se


def test_seed_familywise_error() -> None:
    # eval-harness guide: eight classes at 5%: about 34%; metrics guide: twenty variants: 64%
    assert round(familywise_error_rate(0.05, 8), 2) == 0.34
    assert round(familywise_error_rate(0.05, 20), 2) == 0.64


def test_holm_and_bh_match_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(1)
    for m in (1, 2, 5, 17):
        p = rng.uniform(0, 0.2, m)
        p[0] = p[-1]  # a tie
        np.testing.assert_allclose(holm_adjust(p), multipletests(p, method="holm")[1])
        np.testing.assert_allclose(benjamini_hochberg(p), multipletests(p, method="fdr_bh")[1])
    assert holm_adjust([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    with pytest.raises(ValueError):
        holm_adjust([0.5, 1.2])
