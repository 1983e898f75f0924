"""Adaptive repeats (never only failures), power planning, and the new suite settings."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from harness.config.models import GatePolicy, Suite
from harness.release.adaptive import design_summary, select_repeats
from harness.release.compare import paired_comparison
from harness.release.gate import interval_level, primary_verdict
from harness.release.power import run_sensitivity, tasks_needed

from .helpers import row, table


def test_selection_follows_discordance_never_one_arms_failure():
    rows = []
    for t, (a, b) in {
        "both-fail": (0, 0),
        "both-pass": (1, 1),
        "fixed": (0, 1),
        "broke": (1, 0),
    }.items():
        rows += [row("base", t, a), row("cand", t, b)]
    chosen = select_repeats(table(rows), ["base", "cand"], first_k=1, max_k=5, budget_trials=None)
    assert sorted(t for t, _, _ in chosen) == ["broke", "fixed"]
    assert {n for _, n, _ in chosen} == {4}
    # a single arm that fails: nothing to repeat, whatever the settings
    only = [row("base", f"t{i}", 0) for i in range(5)]
    assert select_repeats(table(only), ["base"], first_k=1, max_k=9, budget_trials=None) == []


def test_unstable_tasks_and_the_budget():
    rows = [row(a, "u", k % 2, index=k) for a in ("base", "cand") for k in range(2)]
    rows += [row("base", f"d{i}", 0) for i in range(5)] + [
        row("cand", f"d{i}", 1) for i in range(5)
    ]
    rows += [row(a, f"d{i}", 1, index=1) for a in ("base", "cand") for i in range(5)]
    chosen = select_repeats(table(rows), ["base", "cand"], first_k=2, max_k=4, budget_trials=10)
    assert sum(n * 2 for _, n, _ in chosen) <= 10
    assert all(reason == "discordant" for _, _, reason in chosen)  # discordant come first


def test_suite_settings_aa_repeats_and_gate():
    base = {
        "name": "x",
        "tasks": ["t.yaml"],
        "arms": [{"name": "b", "agent": "noop"}, {"name": "c", "agent": "noop"}],
    }
    s = Suite.model_validate(
        {
            **base,
            "aa": True,
            "gate": {"rule": "improvement"},
            "repeats": {"mode": "adaptive", "max_k": 3},
        }
    )
    assert [a.name for a in s.arms] == ["b", "c", "b-aa"]
    assert Suite.model_validate(s.model_dump(mode="json")).arms[-1].name == "b-aa"
    with pytest.raises(ValidationError, match="needs a margin"):
        Suite.model_validate({**base, "gate": {"rule": "non-inferiority"}})
    with pytest.raises(ValidationError, match="at least two"):
        Suite.model_validate(
            {**base, "arms": base["arms"][:1], "repeats": {"mode": "adaptive", "max_k": 3}}
        )
    with pytest.raises(ValidationError, match="Extra inputs"):
        Suite.model_validate({**base, "repeats": {"mode": "adaptive", "retry_failures": True}})


def _sim_adaptive(rng, p_a, p_b, first_k, max_k):
    """Phase 1 for all tasks, then repeats on the discordant/unstable ones (as the runner)."""
    n = p_a.size
    rows = []
    for j in range(n):
        for k in range(first_k):
            rows += [
                row("base", f"t{j}", rng.random() < p_a[j], index=k),
                row("cand", f"t{j}", rng.random() < p_b[j], index=k),
            ]
    chosen = select_repeats(
        table(rows), ["base", "cand"], first_k=first_k, max_k=max_k, budget_trials=None
    )
    for t, extra, _ in chosen:
        j = int(t[1:])
        for k in range(first_k, first_k + extra):
            rows += [
                row("base", t, rng.random() < p_a[j], index=k),
                row("cand", t, rng.random() < p_b[j], index=k),
            ]
    return rows


def test_adaptive_spends_fewer_trials_for_the_same_verdict():
    rng = np.random.default_rng(3)
    n, k = 200, 4
    # a planted design: most tasks settled (always pass / always fail), 40 real fixes
    p_a = np.r_[np.ones(110), np.zeros(50), np.zeros(40)]
    p_b = np.r_[np.ones(110), np.zeros(50), np.full(40, 0.9)]
    policy = GatePolicy(rule="improvement")
    adaptive = _sim_adaptive(rng, p_a, p_b, 1, k)
    full = [
        row(a, f"t{j}", rng.random() < p[j], index=i)
        for j in range(n)
        for i in range(k)
        for a, p in (("base", p_a), ("cand", p_b))
    ]
    verdicts = []
    for rows in (adaptive, full):
        a = [r for r in rows if r["arm"] == "base"]
        b = [r for r in rows if r["arm"] == "cand"]
        c = paired_comparison(table(a), table(b), confidence=interval_level(policy))
        verdicts.append(primary_verdict(c, policy)[0])
    assert verdicts == ["improvement", "improvement"]
    counts = {
        arm: [
            sum(1 for r in adaptive if r["arm"] == arm and r["task_id"] == f"t{j}")
            for j in range(n)
        ]
        for arm in ("base", "cand")
    }
    assert counts["base"] == counts["cand"]  # the same repeats for both arms
    d = design_summary({"mode": "adaptive", "max_k": k}, 1, counts)
    assert d["trials"] == len(adaptive) < len(full) == d["full_repeats_trials"]
    assert d["repeated_tasks"] <= 45 and d["saved_share"] > 0.6
    assert "adaptive repeats" in d["design"]


def test_power_planning_matches_seed_001():
    from harness.stats import cases_needed_paired

    p = tasks_needed(0.85, 0.05)
    assert abs(p["unpaired_per_arm"] - 680) < 10  # eval-harness guide: about 680 per arm
    assert all(row["tasks"] < p["unpaired_per_arm"] for row in p["paired"])
    assert cases_needed_paired(0.03, 0.12) == 1039  # the metrics guide's two-sided z example
    # the gate is one-sided: it needs fewer than the two-sided z-test would, and the plan's
    # number is where its simulated power reaches 80%
    given = tasks_needed(0.65, 0.03, discordance=0.12)
    assert given["paired"][0]["tasks"] < 1039
    assert 0.78 <= given["paired"][0]["simulated_power"] <= 0.85
    a = [row("base", f"t{i}", i < 40) for i in range(50)]
    b = [row("cand", f"t{i}", i < 45) for i in range(50)]
    s = run_sensitivity(table(a), table(b))
    assert s["n_tasks"] == 50 and s["discordance"] == pytest.approx(0.1)
    assert s["mde"] is None or s["mde"] > 0
