"""Judge statistics: agreement, corrected rates, pairwise win rates and Bradley–Terry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats.agreement import cohen_kappa, krippendorff_alpha
from harness.stats.judge_correction import (
    Calibration,
    JudgeNotInformative,
    corrected_delta,
    corrected_rate,
    rogan_gladen,
)
from harness.stats.pairwise import (
    bradley_terry,
    bradley_terry_ratings,
    position_bias,
    swapped_outcome,
    win_rate,
)


def _battles(spec: list[tuple[str, str, int]]) -> tuple[list[str], list[str], list[float]]:
    first, second, score = [], [], []
    for winner, loser, times in spec:
        first += [winner] * times
        second += [loser] * times
        score += [1.0] * times
    return first, second, score


GUIDE_EXAMPLE = [
    ("A", "B", 64),
    ("B", "A", 36),
    ("B", "C", 64),
    ("C", "B", 36),
    ("A", "C", 76),
    ("C", "A", 24),
]
"""The metrics guide's battles: A beats B 64%, B beats C 64%, A beats C 76%."""


def test_bradley_terry_reproduces_the_metrics_guide_example() -> None:
    # 64% A over B, 64% B over C, 76% A over C -> 1100 / 1000 / 900 (metrics guide).
    f, s, sc = _battles(GUIDE_EXAMPLE)
    ratings = bradley_terry(f, s, sc)
    assert {k: round(v) for k, v in ratings.items()} == {"A": 1100, "B": 1000, "C": 900}
    assert math.isclose(sum(ratings.values()) / 3, 1000.0, abs_tol=1e-9)


def test_bradley_terry_matches_a_logistic_regression_on_random_data() -> None:
    from statsmodels.discrete.discrete_model import Logit

    rng = np.random.default_rng(7)
    m, n = 5, 600
    truth = rng.normal(0, 0.8, m)
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    win = rng.random(n) < 1 / (1 + np.exp(-(truth[i] - truth[j])))
    ours = bradley_terry([f"a{k}" for k in i], [f"a{k}" for k in j], win.astype(float))
    # The independent fit: logistic regression on +1/-1 arm indicators, arm 0 dropped.
    x = np.zeros((n, m))
    x[np.arange(n), i] = 1.0
    x[np.arange(n), j] = -1.0
    fit = Logit(win.astype(float), x[:, 1:]).fit(disp=0, tol=1e-14, maxiter=200)
    beta = np.concatenate([[0.0], fit.params])
    elo = 1000 + 400 / math.log(10) * (beta - beta.mean())
    for k in range(m):
        assert abs(ours[f"a{k}"] - elo[k]) < 1e-6


def test_bradley_terry_counts_a_tie_as_half_a_win_each_way() -> None:
    tie = bradley_terry(["A", "A", "A"], ["B", "B", "B"], [1.0, 0.0, 0.5])
    assert abs(tie["A"] - tie["B"]) < 1e-9


def test_bradley_terry_refuses_an_arm_that_won_everything() -> None:
    with pytest.raises(ValueError, match="won or lost every comparison"):
        bradley_terry(["A", "A"], ["B", "B"], [1.0, 1.0])


def test_rating_intervals_resample_clusters_and_cover_the_point() -> None:
    f, s, sc = _battles(GUIDE_EXAMPLE)
    clusters = [k % 20 for k in range(len(f))]
    r = bradley_terry_ratings(f, s, sc, clusters, n_resamples=300, rng=1)
    assert r.arms == ["A", "B", "C"] and r.n_clusters == 20 and r.degenerate == 0
    for point, lo, hi in zip(r.rating, r.lo, r.hi, strict=True):
        assert lo < point < hi
    # A is 100 points above B with 100 comparisons between them: not a 1-point interval.
    assert 20 < r.hi[0] - r.lo[0] < 300
    # One cluster holding everything: nothing to resample, the interval collapses honestly.
    one = bradley_terry_ratings(f, s, sc, [0] * len(f), n_resamples=50, rng=1)
    assert one.n_clusters == 1 and one.lo == one.hi == one.rating


def test_swapped_pairs_count_disagreement_as_a_tie() -> None:
    assert swapped_outcome("A", "A") == 1.0
    assert swapped_outcome("B", "B") == 0.0
    assert swapped_outcome("A", "B") == 0.5  # followed the position both times
    assert swapped_outcome("tie", "A") == 0.5
    with pytest.raises(ValueError, match="'A', 'B' or 'tie'"):
        swapped_outcome("first", "A")


def test_position_bias_counts_pairs_that_flipped_with_the_order() -> None:
    bias = position_bias(["A", "A", "B", "A"], ["B", "A", "A", "tie"])
    assert (bias.biased, bias.n) == (2, 4) and bias.rate == 0.5
    assert bias.lo < 0.5 < bias.hi


def test_position_bias_interval_is_clustered_when_pairs_share_a_cluster() -> None:
    """Pairs of one cluster flip together here (a judge biased on some prompts only): the
    interval over clusters is the shared rate interval of the 0/1 flips, wider than Wilson's,
    which counts the 48 pairs as independent."""
    from harness.stats import mean_estimate

    flips_by_cluster = [1, 1, 0, 0, 0, 1, 0, 0]
    first = [("A" if f else "B") for f in flips_by_cluster for _ in range(6)]
    second = ["B"] * 48  # A then B: the verdict followed the position
    clusters = [c for c in range(8) for _ in range(6)]
    plain = position_bias(first, second)
    clustered = position_bias(first, second, clusters=clusters)
    assert clustered.rate == plain.rate == 18 / 48 and clustered.n == 48
    flips = [1.0 if a == "A" else 0.0 for a in first]
    shared = mean_estimate(flips, clusters)
    assert (clustered.lo, clustered.hi) == pytest.approx((shared.lo, shared.hi))
    assert clustered.hi - clustered.lo > 1.5 * (plain.hi - plain.lo)


def test_win_rate_is_wins_plus_half_ties_over_comparisons_with_a_clustered_interval() -> None:
    scores = [1, 1, 0.5, 0, 1, 0.5, 1, 1] * 5
    tasks = [f"t{k // 2}" for k in range(40)]
    clusters = [f"c{k // 8}" for k in range(40)]
    est = win_rate(scores, tasks, clusters)
    assert est.estimate == pytest.approx(np.mean(scores))
    assert est.unit == "cluster" and est.n_units == 5 and est.lo < est.estimate < est.hi


def test_cohen_kappa_matches_statsmodels() -> None:
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 300)
    b = np.where(rng.random(300) < 0.7, a, rng.integers(0, 3, 300))
    table = np.zeros((3, 3))
    np.add.at(table, (a, b), 1)
    ref = cohens_kappa(table)
    ours = cohen_kappa(a, b)
    assert ours.estimate == pytest.approx(ref.kappa, abs=1e-12)
    assert (ours.lo, ours.hi) == pytest.approx((ref.kappa_low, ref.kappa_upp), abs=1e-12)
    assert ours.n == 300


def test_krippendorff_alpha_reproduces_krippendorffs_worked_example() -> None:
    # Krippendorff (2011), nominal data, 4 observers, 12 units, missing values: alpha = 0.743.
    n = None
    table = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    alpha = krippendorff_alpha(np.array(table, dtype=object).T, n_resamples=200)
    assert round(alpha.estimate, 3) == 0.743
    assert alpha.n == 11  # the last unit has one label: not pairable
    assert alpha.lo < alpha.estimate <= alpha.hi


def test_krippendorff_alpha_of_two_raters_is_near_kappa() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 400)
    b = np.where(rng.random(400) < 0.85, a, 1 - a)
    alpha = krippendorff_alpha(np.stack([a, b], axis=1), n_resamples=100)
    assert alpha.estimate == pytest.approx(cohen_kappa(a, b).estimate, abs=0.01)


def test_calibration_counts_and_the_metrics_guide_specificity() -> None:
    cal = Calibration(true_pos=90, false_neg=10, true_neg=860, false_pos=40)
    assert round(cal.specificity * 100, 1) == 95.6  # 860/900
    assert cal.sensitivity == 0.9 and cal.n == 1000
    judged = [1, 1, 0, 0, 1]
    human = [1, 0, 0, 1, 1]
    assert Calibration.of(judged, human) == Calibration(2, 1, 1, 1)


def test_rogan_gladen_inverts_the_judges_error() -> None:
    # A judge with Se 0.9, Sp 0.8 on a true rate of 0.6 reports 0.9*0.6 + 0.2*0.4 = 0.62.
    assert rogan_gladen(0.62, 0.9, 0.8) == pytest.approx(0.6)
    assert rogan_gladen(0.05, 0.9, 0.8) == 0.0  # bounded to [0, 1]
    with pytest.raises(JudgeNotInformative, match="no better than chance"):
        rogan_gladen(0.5, 0.5, 0.5)


def test_corrected_interval_is_wider_than_the_sampling_interval_alone() -> None:
    cal = Calibration(true_pos=45, false_neg=5, true_neg=40, false_pos=10)
    c = corrected_rate(0.62, 0.03, cal, df=20.0)
    assert c.estimate == pytest.approx(rogan_gladen(0.62, 0.9, 0.8))
    assert c.lo < c.estimate < c.hi
    sampling_only = 2 * 1.96 * 0.03 / (0.9 + 0.8 - 1)
    assert c.hi - c.lo > sampling_only * 1.1
    # More labels: narrower.
    big = Calibration(true_pos=450, false_neg=50, true_neg=400, false_pos=100)
    assert corrected_rate(0.62, 0.03, big, df=20.0).hi - corrected_rate(
        0.62, 0.03, big, df=20.0
    ).lo < (c.hi - c.lo)
    assert c == corrected_rate(0.62, 0.03, cal, df=20.0)  # seeded: every view agrees


def test_corrected_decision_bounds_carry_the_judged_rates_skew() -> None:
    # Near the top of the scale the judged rate's decision bounds are skewed: 0.88 with its
    # lower bound 0.80 (farther than a symmetric se 0.03 reaches) and its upper 0.92.
    cal = Calibration(true_pos=9000, false_neg=500, true_neg=850, false_pos=150)
    plain = corrected_rate(0.88, 0.03, cal, df=11.0, confidence=0.9)
    careful = corrected_rate(0.88, 0.03, cal, df=11.0, confidence=0.9, bounds=(0.80, 0.92))
    assert careful.estimate == plain.estimate
    assert careful.lo < plain.lo and careful.hi == plain.hi  # the cautious end, each side
    # With Se and Sp all but known, the lower bound is the judged lower bound corrected.
    assert careful.lo == pytest.approx(
        rogan_gladen(0.80, cal.sensitivity, cal.specificity), abs=0.01
    )
    assert "decision bounds" in careful.method and "[0.800, 0.920]" in careful.method
    # Symmetric bounds at the plain interval's own reach change nothing.
    reach = 0.03 * 1.7959  # t quantile on 11 df at 90%
    same = corrected_rate(
        0.88, 0.03, cal, df=11.0, confidence=0.9, bounds=(0.88 - reach, 0.88 + reach)
    )
    assert (same.lo, same.hi) == pytest.approx((plain.lo, plain.hi), abs=1e-3)


def test_corrected_rate_refuses_a_calibration_set_without_both_kinds() -> None:
    with pytest.raises(JudgeNotInformative, match="passed and trials people failed"):
        corrected_rate(0.5, 0.05, Calibration(10, 0, 0, 0))


def test_corrected_delta_scales_by_youden() -> None:
    cal = Calibration(true_pos=90, false_neg=10, true_neg=80, false_pos=20)
    d = corrected_delta(0.07, 0.02, cal, df=30.0)
    assert d.estimate == pytest.approx(0.1)
    assert d.lo < 0.1 < d.hi and d.lo > -0.05
