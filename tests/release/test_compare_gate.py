"""Paired comparison and gate verdicts on the eval-harness guide's branches and planted in-memory arms."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from harness.config.models import GatePolicy
from harness.release.compare import paired_comparison
from harness.release.gate import evaluate_gate, interval_level, primary_verdict
from harness.report.render.junit import gate_junit
from harness.report.render.release import gate_markdown

from .helpers import row, seed001, simulate, table

IMPROVE = GatePolicy(rule="improvement")


def split(rows):
    return [r for r in rows if r["arm"] == "base"], [r for r in rows if r["arm"] == "cand"]


@pytest.mark.parametrize(
    ("branch", "counts", "p", "verdict"),
    [
        ("A", {"both_pass": 42, "fixed": 5, "broke": 0, "both_fail": 3}, 0.031, "improvement"),
        ("B", {"both_pass": 39, "fixed": 8, "broke": 3, "both_fail": 0}, 0.113, "inconclusive"),
    ],
)
def test_seed001_branches(branch, counts, p, verdict):
    rows = seed001(branch)
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand"])
    c = g["primary"]
    assert c["table"] == counts
    assert c["p_values"]["greater"] == pytest.approx(p, abs=5e-4)
    assert c["test"] == "exact McNemar on discordant tasks"
    assert c["estimate"] == pytest.approx(0.10)
    assert g["verdict"] == verdict
    assert g["exit_code"] == (0 if verdict == "improvement" else 11)


def test_paired_comparison_pairs_only_shared_tasks_and_names_the_pairing():
    a = [row("base", f"t{i}", i % 2, index=k) for i in range(10) for k in range(3)]
    b = [row("cand", f"t{i}", 1, index=k) for i in range(2, 12) for k in range(3)]
    c = paired_comparison(table(a), table(b))
    assert c["n_tasks"] == 8
    assert c["dropped"]["n"] == 4
    assert c["dropped"]["baseline_only"] == ["t0", "t1"]
    assert c["test"] == "sign test on per-task differences"
    assert c["pairing"] == "per-trial (shared seed blocks)"
    assert c["signs"] == {"improved": 4, "worse": 0, "tied": 4}
    assert c["estimate"] == pytest.approx(0.5)
    for r in b:
        r["seed"] += 1
    assert paired_comparison(table(a), table(b))["pairing"] == "per-task"


def test_denominator_and_unresolved_coverage_no_verdict():
    rows = seed001("A")
    for r in rows[:12]:
        if r["arm"] == "cand":
            r["status"], r["passed"] = "infra_error", None
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand"])
    assert g["verdict"] == "no-verdict" and g["exit_code"] == 13
    assert g["coverage"]["arms"]["cand"]["unresolved"] == 6
    n = g["coverage"]["arms"]["cand"]["trials"]
    share = 6 / n
    assert "max_unresolved" in g["reasons"][0]
    assert f"cand 6/{n} ({share:.1%})" in g["reasons"][0], g["reasons"]  # a fraction and a rate
    excl = paired_comparison(*map(table, split(rows)), denominator="exclude")
    assert excl["n_tasks"] == 44 and excl["dropped"]["no_resolved_trial"]


def test_must_never_is_asserted_listed_first_and_blocks():
    rows = seed001("A")
    for r in rows:
        r["task_class"] = "irreversible" if r["task_id"] in ("t00", "t01") else "ordinary"
    policy = GatePolicy(rule="improvement", must_never=["irreversible"])
    g = evaluate_gate(table(rows), policy, arms=["base", "cand"])
    assert g["verdict"] == "improvement"
    assert g["must_never"][0]["status"] == "held"
    next(r for r in rows if r["task_id"] == "t01" and r["arm"] == "cand")["status"] = "failed"
    g = evaluate_gate(table(rows), policy, arms=["base", "cand"])
    assert g["verdict"] == "no-verdict" and g["exit_code"] == 14
    assert g["blocked_by_must_never"] and "t01#0" in g["reasons"][0]
    n = g["must_never"][0]["trials"]
    assert f"violated: 1/{n} trials failed ({1 / n:.1%}): t01#0" in g["reasons"][0]
    md = gate_markdown(g)
    assert md.index("Must-never") < md.index("Primary comparison")
    suite = ET.fromstring(gate_junit(g)).find("testsuite")
    cases = suite.findall("testcase")
    assert cases[0].get("name") == "must-never: class irreversible"
    assert cases[0].find("failure") is not None
    names = [c.get("name").split(" ")[0] for c in cases]
    assert names == ["must-never:", "unresolved", "retry", "primary"]


def test_flagged_must_never_tasks_from_the_config():
    rows = seed001("B")
    g = evaluate_gate(
        table(rows), IMPROVE, arms=["base", "cand"], config={"tasks": {"t40": {"must_never": True}}}
    )
    assert g["must_never"][0]["name"] == "must-never: tasks marked must_never"
    assert g["must_never"][0]["status"] == "violated"  # t40 broke (eval-harness guide branch B)


def _verdict(rows, policy):
    a, b = split(rows)
    c = paired_comparison(table(a), table(b), confidence=interval_level(policy))
    return primary_verdict(c, policy)[0]


@pytest.mark.parametrize(
    ("shift", "allowed"),
    [
        (0.0, {"inconclusive", "non-inferior"}),
        (0.10, {"improvement"}),
        (-0.10, {"regression"}),
    ],
)
def test_planted_differences_over_200_tasks(shift, allowed):
    rows = simulate(np.random.default_rng(11), 200, shift)
    assert _verdict(rows, IMPROVE) in allowed
    ni = GatePolicy(rule="non-inferiority", margin=0.03)
    expected_ni = {0.0: {"inconclusive", "non-inferior"}, 0.10: {"non-inferior"}}
    assert _verdict(rows, ni) in expected_ni.get(shift, {"regression", "inconclusive"})


def test_aa_false_regression_rate_at_most_alpha():
    rng = np.random.default_rng(2024)
    runs = 500
    regressions = improvements = 0
    for _ in range(runs):
        v = _verdict(simulate(rng, 200, 0.0), IMPROVE)
        regressions += v == "regression"
        improvements += v == "improvement"
    se = np.sqrt(0.05 * 0.95 / runs)
    assert regressions / runs <= 0.05 + 2 * se
    assert improvements / runs <= 0.05 + 2 * se


def test_aa_arm_is_the_noise_floor_beside_the_comparison():
    rows = simulate(np.random.default_rng(5), 120, 0.1, arms=("base", "cand", "base-aa"))
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand", "base-aa"])
    n = g["noise_floor"]
    assert n["arm"] == "base-aa" and n["lo"] <= 0 <= n["hi"]
    assert "noise floor (A/A" in gate_markdown(g)


def test_screens_call_out_opposite_moves_under_a_flat_headline():
    # eval-harness guide: stale-policy 12/12 -> 9/12, out-of-scope 7/10 -> 10/10, five others unchanged
    rows = []
    for i in range(12):
        rows += [
            row("base", f"s{i}", 1, cls="stale-policy"),
            row("cand", f"s{i}", i >= 3, cls="stale-policy"),
        ]
    for i in range(10):
        rows += [
            row("base", f"o{i}", i >= 3, cls="out-of-scope"),
            row("cand", f"o{i}", 1, cls="out-of-scope"),
        ]
    for i in range(48):
        ok = i >= 5
        rows += [
            row("base", f"x{i}", ok, cls=f"other{i % 5}"),
            row("cand", f"x{i}", ok, cls=f"other{i % 5}"),
        ]
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand"])
    assert g["primary"]["estimate"] == pytest.approx(0.0)
    assert g["verdict"] == "inconclusive"
    s = g["screens"]
    assert s["opposite_moves"] == {"up": ["out-of-scope"], "down": ["stale-policy"]}
    assert "flat headline" in s["note"]
    assert set(s["look_here"]) == {"out-of-scope", "stale-policy"}
    by = {c["class"]: c for c in s["classes"]}
    assert by["stale-policy"]["p_values"]["less"] == pytest.approx(0.125)
    assert by["stale-policy"]["p_holm"] >= by["stale-policy"]["p_value"]
