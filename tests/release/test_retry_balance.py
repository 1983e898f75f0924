"""The gate's retry balance: arms that differ in retried or unresolved share beyond the
bound (and clear of noise) get no may-ship verdict, whatever the statistics say."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.config.models import GatePolicy
from harness.release.evidence import balance_check
from harness.release.gate import evaluate_gate
from harness.report.render.junit import gate_junit
from harness.report.render.release import gate_markdown

from .helpers import row, seed001, table

IMPROVE = GatePolicy(rule="improvement")


def retry(rows, arm, n):
    """Mark the first ``n`` trials of ``arm`` as retried (two attempts)."""
    for r in [r for r in rows if r["arm"] == arm][:n]:
        r["attempts"] = 2
    return rows


def test_a_candidate_that_retried_much_more_is_inconclusive_not_shipped():
    rows = retry(seed001("A"), "cand", 10)  # 10/50 = 20 points more than the baseline
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand"])
    assert g["primary"]["verdict"] == "improvement"  # the statistics alone would ship
    assert g["verdict"] == "inconclusive" and g["exit_code"] == 11 and not g["may_ship"]
    assert g["balance"]["status"] == "imbalanced"
    retried = g["balance"]["gaps"][0]
    assert retried["what"] == "retried" and retried["imbalanced"]
    assert retried["arms"]["cand"]["count"] == 10 and retried["arms"]["base"]["count"] == 0
    assert retried["gap"] == 0.2 and retried["lo"] > 0
    assert "max_retry_gap" in g["reasons"][0] and "retried share" in g["reasons"][0]


def test_gaps_inside_the_bound_or_inside_the_noise_keep_the_verdict():
    small = retry(seed001("A"), "cand", 2)  # 4 points: inside the 5-point bound
    assert evaluate_gate(table(small), IMPROVE, arms=["base", "cand"])["verdict"] == "improvement"
    both = retry(retry(seed001("A"), "cand", 10), "base", 9)  # alike in both arms
    g = evaluate_gate(table(both), IMPROVE, arms=["base", "cand"])
    assert g["verdict"] == "improvement" and g["balance"]["status"] == "ok"
    noisy = retry(seed001("A"), "cand", 4)  # 8 points, but 4/50 vs 0/50 is within noise
    g = evaluate_gate(table(noisy), IMPROVE, arms=["base", "cand"])
    assert g["balance"]["gaps"][0]["lo"] < 0 < g["balance"]["gaps"][0]["hi"]
    assert g["verdict"] == "improvement"
    loose = GatePolicy(rule="improvement", max_retry_gap=0.25)
    assert evaluate_gate(table(retry(seed001("A"), "cand", 10)), loose, arms=["base", "cand"])[
        "verdict"
    ] == ("improvement")


def test_unresolved_gap_counts_too_when_max_unresolved_allows_it():
    rows = seed001("A")
    for r in [r for r in rows if r["arm"] == "base"][:8]:
        r["status"], r["passed"] = "infra_error", None
    policy = GatePolicy(rule="improvement", max_unresolved=0.5)
    g = evaluate_gate(table(rows), policy, arms=["base", "cand"])
    unresolved = g["balance"]["gaps"][1]
    assert unresolved["what"] == "unresolved" and unresolved["gap"] == -0.16
    assert unresolved["imbalanced"] and g["verdict"] == "inconclusive"


def test_balance_never_turns_a_block_into_anything_else_and_is_rendered():
    rows = seed001("B")  # 3 broke, 8 fixed: inconclusive under improvement already
    for r in rows:
        if r["arm"] == "cand":
            r["passed"], r["status"] = False, "failed"  # now a clear regression
    retry(rows, "cand", 20)
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand"])
    assert g["verdict"] == "regression" and g["balance"]["status"] == "imbalanced"
    md = gate_markdown(g)
    assert "**Retry balance**" in md and "retried base 0/50 (0.0%), cand 20/50 (40.0%)" in md
    cases = ET.fromstring(gate_junit(g)).iter("testcase")
    balance = next(c for c in cases if c.get("name") == "retry balance")
    assert balance.find("failure").get("type") == "imbalanced"


def test_threshold_gate_without_a_baseline_has_nothing_to_balance():
    rows = [row("cand", f"t{i}", i % 5 != 0) for i in range(40)]
    policy = GatePolicy(rule="threshold", bar=0.5)
    g = evaluate_gate(table(rows), policy, arms=["cand"])
    assert g["balance"]["status"] == "not applicable" and g["balance"]["gaps"] == []
    assert balance_check(None, ("cand", table(rows)), 0.05, 0.95)["status"] == "not applicable"


def test_error_rate_and_power_on_a_small_seeded_sample():
    """A live, small version of ``benchmarks/retry_balance.py`` (same code path)."""
    import numpy as np

    from benchmarks.retry_balance import called_rate, probe_ship_rate

    rng = np.random.default_rng(7)
    assert called_rate(rng, 60, 0.05, 0.05, 200) <= 0.06  # false alarms at equal rates
    assert called_rate(rng, 60, 0.02, 0.22, 200) >= 0.85  # a 20-point gap is seen
    # the gate-level probe: a 10-points-worse candidate that turns failures into retries
    gamed = dict(refusal_is_infra=True)
    assert probe_ship_rate(rng, 60, 40, balance=False, **gamed) >= 0.9  # what it won before
    assert probe_ship_rate(rng, 60, 40, balance=True, **gamed) == 0.0
