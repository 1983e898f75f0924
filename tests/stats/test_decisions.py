"""The gate's statistics as pure functions: the batch core equals the one-sample path, the
simulated gate rule equals ``harness gate``, skew-aware bounds where the symmetric one fails,
and nightly evidence that accumulates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.config.models import GatePolicy
from harness.release.gate import evaluate_gate
from harness.stats import GateRule, mean_estimate, paired_estimate
from harness.stats.cluster_design import ClusterDesign
from harness.stats.estimate import cr2_ik
from harness.stats.gate_rule import VERDICT_NAMES
from harness.stats.mean_intervals import rate_intervals, t_quantile
from harness.stats.sequential import (
    alarm_threshold,
    confirmation,
    detector,
    drift_se,
    innovations,
    log_mixture,
    night_look,
)
from tests.release.helpers import row, table


def _planted(rng, sizes, rate_logit=1.5, spread=1.0, trials=1):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    eta = rate_logit + rng.normal(0, spread, len(sizes))[codes] + rng.normal(0, 0.8, codes.size)
    p = 1 / (1 + np.exp(-eta))
    return codes, p, rng.binomial(trials, p) / trials


def test_batch_core_equals_the_one_sample_computation():
    rng = np.random.default_rng(1)
    codes, _, _ = _planted(rng, [2, 4, 8, 18, 3, 5])
    x = rng.random((7, codes.size))
    w = rng.uniform(0.5, 2.0, codes.size)
    design = ClusterDesign.of(codes, w)
    mean, se, df = design.cr2(x)
    for r in range(7):
        se1, df1 = cr2_ik(x[r], codes, w)
        assert se[r] == pytest.approx(se1, rel=1e-12) and df[r] == pytest.approx(df1, rel=1e-12)
        assert mean[r] == pytest.approx(np.dot(w, x[r]) / w.sum())
    # tasks in any order give the same numbers
    perm = rng.permutation(codes.size)
    m2, s2, d2 = ClusterDesign.of(codes[perm], w[perm]).cr2(x[:, perm])
    assert np.allclose(m2, mean) and np.allclose(s2, se) and np.allclose(d2, df)


def test_the_rate_interval_is_on_the_logit_scale_and_longer_toward_the_skew():
    rng = np.random.default_rng(2)
    codes, _, x = _planted(rng, [8] * 12, rate_logit=2.5)
    e = mean_estimate(x, codes)
    assert e.method_key == "logit-cr2" and "Imbens–Kolesár" in e.method
    assert 0 <= e.lo < e.estimate < e.hi <= 1
    assert e.estimate - e.lo > e.hi - e.estimate  # near the top the long side is below
    sym = e.estimate - float(t_quantile(np.array([e.df]), 0.95)[0]) * e.se
    assert e.lo < sym
    # batch rows give the same interval as the one-sample call
    iv = rate_intervals(ClusterDesign.of(codes), x[None, :], 0.95)
    assert (iv.lo[0], iv.hi[0]) == pytest.approx((e.lo, e.hi))


def test_cautious_bound_is_never_less_cautious_and_plain_for_binomial_tasks():
    rng = np.random.default_rng(3)
    for trials in (1, 3):
        codes, _, x = _planted(rng, [2, 4, 8, 18] * 3, rate_logit=2.0, spread=1.2, trials=trials)
        shown = mean_estimate(x, codes, confidence=0.9)
        strict = mean_estimate(x, codes, confidence=0.9, cautious=True, trials=[trials] * x.size)
        assert strict.lo <= shown.lo and strict.hi >= shown.hi
    # 50 independent binary tasks, 47 passed: the skew is a binomial's, which the logit
    # scale already handles, so Hall's part adds nothing beyond the logit bound
    x = np.r_[np.ones(47), np.zeros(3)]
    strict = mean_estimate(x, np.arange(50), confidence=0.9, cautious=True)
    assert strict.lo > 0.8


def test_paired_mover_reduces_to_the_t_interval_when_nothing_is_skewed():
    rng = np.random.default_rng(4)
    codes = np.repeat(np.arange(30), 4)
    a = rng.uniform(0.4, 0.6, codes.size)
    b = a + rng.normal(0.0, 0.01, codes.size)
    e = paired_estimate(a, b, codes)
    mean, se, df = ClusterDesign.of(codes).cr2((b - a)[None, :])
    q = float(t_quantile(df, 0.95)[0])
    assert e.method_key == "mover"
    assert (e.lo, e.hi) == pytest.approx((mean[0] - q * se[0], mean[0] + q * se[0]), abs=2e-3)


def test_seed001_exact_mcnemar_branch_a_still_ships():
    """Eval-harness guide: 5 fixed / 0 broke of 50 gives one-sided p = 0.031 — improvement."""
    from tests.release.helpers import seed001

    g = evaluate_gate(table(seed001("A")), GatePolicy(rule="improvement"), arms=["base", "cand"])
    assert g["verdict"] == "improvement" and g["primary"]["lo"] > 0


@pytest.mark.parametrize("rule", ["improvement", "non-inferiority", "threshold"])
def test_simulated_gate_rule_is_the_gate(rule):
    """``GateRule`` on a batch of runs gives exactly ``harness gate``'s verdict on each run."""
    rng = np.random.default_rng(5)
    policy = {
        "improvement": GatePolicy(rule="improvement"),
        "non-inferiority": GatePolicy(rule="non-inferiority", margin=0.05),
        "threshold": GatePolicy(rule="threshold", bar=0.75),
    }[rule]
    sizes = [2, 4, 8, 18, 3, 6, 9, 2, 5, 7, 4, 8]
    codes = np.repeat(np.arange(len(sizes)), sizes)
    runs, trials = 40, 2
    p = 1 / (1 + np.exp(-(1.2 + rng.normal(0, 0.8, (runs, len(sizes)))[:, codes])))
    shift = rng.choice([-0.6, 0.0, 0.6], size=(runs, 1))
    q = 1 / (1 + np.exp(-(np.log(p / (1 - p)) + shift)))
    ca, cb = rng.binomial(trials, p), rng.binomial(trials, q)
    design = ClusterDesign.of(codes)
    t = np.full(codes.size, trials)
    gate_rule = GateRule.of(policy)
    if rule == "threshold":
        batch = gate_rule.threshold(design, cb / trials, t)
    else:
        batch = gate_rule.paired(design, ca / trials, cb / trials, (t, t))
    for r in range(runs):
        rows = []
        for i, c in enumerate(codes):
            for k in range(trials):
                rows.append(row("base", f"t{i:03d}", k < ca[r, i], index=k, cluster=f"c{c}"))
                rows.append(row("cand", f"t{i:03d}", k < cb[r, i], index=k, cluster=f"c{c}"))
        if rule == "threshold":
            rows = [x for x in rows if x["arm"] == "cand"]
        g = evaluate_gate(
            table(rows), policy, arms=["cand"] if rule == "threshold" else ["base", "cand"]
        )
        assert g["verdict"] == VERDICT_NAMES[int(batch[r])], (r, g["reasons"])
    assert len(set(batch.tolist())) >= 2  # the runs exercise more than one verdict


def test_one_sided_bound_holds_where_the_symmetric_one_fails():
    """A seeded sample of the coverage grid's hardest threshold cell (bar 0.9, 12 unequal
    clusters, strong cluster spread): the symmetric t passes an agent at the bar far more
    than 5% of the time; the gate's cautious bound does not."""
    from benchmarks.coverage_grid import Cell, threshold_cell

    out = threshold_cell(
        np.random.default_rng(6), Cell("threshold", 0.9, 12, False, "strong", 3), 1500
    )
    se = math.sqrt(0.05 * 0.95 / 1500)
    assert out["false pass before"] > 0.05 + 3 * se
    assert out["false pass"] <= 0.05 + 2 * se
    assert 0.93 - 2 * se <= out["coverage"] <= 0.97 + 2 * se


def test_log_mixture_is_the_normal_mixture_integral():
    from scipy import integrate, stats

    s, v, tau = 3.0, 40.0, 0.1

    def integrand(d):
        return math.exp(d * s - d * d * v / 2) * 2 * stats.norm.pdf(d, 0, tau)

    direct, _ = integrate.quad(integrand, 0, 5)
    assert float(log_mixture(np.array(s), np.array(v), tau)) == pytest.approx(math.log(direct))


def test_confirmation_is_a_test_martingale_under_the_null():
    """With no effect, M reaches 1/α at some night in at most α of seasons (Ville), and
    drifts down; with a real effect it grows."""
    rng = np.random.default_rng(7)
    x = rng.normal(0.0, 0.05, (20000, 30))
    m = np.exp(confirmation(x, np.full_like(x, 0.05), 0.0, "above"))
    assert np.mean(np.any(m >= 20, axis=1)) <= 0.05
    assert np.median(m[:, -1]) < 0.5
    grown = np.exp(confirmation(x + 0.05, np.full_like(x, 0.05), 0.0, "above"))
    assert np.mean(grown[:, -1] >= 20) > 0.9


def test_detector_pools_evidence_after_a_change_and_not_before():
    rng = np.random.default_rng(8)
    se = np.full((2000, 60), 0.06)
    null = rng.normal(0.0, 0.06, se.shape)
    alt = null.copy()
    alt[:, 30:] -= 0.10
    level = alarm_threshold(0.05, 60)
    false = np.any(detector(null, se, 0.0, "below").log_r >= level, axis=1).mean()
    trace = detector(alt, se, 0.0, "below")
    first = np.argmax(trace.log_r >= level, axis=1)
    caught = np.any(trace.log_r >= level, axis=1) & (first >= 30) & (first < 40)
    assert false <= 0.05 and caught.mean() >= 0.8
    hit = np.flatnonzero(caught)[0]
    assert 25 <= trace.start[hit, first[hit]] <= 35  # the evidence starts near night 31


def test_innovations_are_standardized_and_drop_after_a_shift():
    rng = np.random.default_rng(9)
    se = np.full((5000, 40), 0.04)
    x = 0.7 + rng.normal(0, 0.04, se.shape)
    r, r_se = innovations(x, se)
    z = r[:, 1:] / r_se[:, 1:]
    assert np.isnan(r[:, 0]).all()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    x[:, 20:] -= 0.1
    r, r_se = innovations(x, se)
    assert (r[:, 20] / r_se[:, 20]).mean() < -2


def test_night_look_and_drift_se():
    x = np.array([[1.0, 0.0, 1.0, 1.0]])
    est, se = night_look(x)
    assert est[0] == pytest.approx(0.75)
    assert se[0] == pytest.approx(np.std(x, ddof=1) / 2)
    before = np.array([[1.0, 1.0, 0.0, 1.0]])
    assert drift_se(x, before)[0] == pytest.approx(night_look(x - before)[1][0] / math.sqrt(2))


def test_plan_priors_keep_the_clusters_apart():
    """``plan --run``'s pilot model: tasks of clusters whose rates differ keep that difference in
    every simulated run (the prior of each task is centred on its cluster's shrunk rate);
    clusters that do not differ beyond sampling noise share the plain Beta(a, b)."""
    from harness.stats.plan_sim import cluster_priors

    rng = np.random.default_rng(3)
    codes = np.repeat(np.arange(12), 6)
    n = np.full(codes.size, 6)
    level = np.where(np.arange(12) % 2 == 0, 0.95, 0.35)[codes]
    c = rng.binomial(n, level)
    pa, pb = cluster_priors(codes, c, n, 1.5, 1.0)
    mean = pa / (pa + pb)
    assert mean[level > 0.9].min() > 0.75 > 0.55 > mean[level < 0.5].max()
    flat = rng.binomial(n, 0.6)
    fa, fb = cluster_priors(codes, flat, n, 6.0, 4.0)
    # no spread between clusters beyond their sampling noise: close to Beta(6, 4) for all
    assert np.ptp(fa / (fa + fb)) < 0.15
