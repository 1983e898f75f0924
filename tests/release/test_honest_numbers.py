"""Honest numbers on every path: the simulated agent's independent arms and the A/A false-
regression rate, degenerate floors, the threshold gate, sequential gates, and `harness plan`
checked against simulations."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from harness.agents.simulated import task_probability, trial_draw_seed
from harness.config.models import GatePolicy
from harness.plan import trial_seed
from harness.release.compare import paired_comparison
from harness.release.gate import evaluate_gate, interval_level, primary_verdict, threshold_check
from harness.release.power import (
    cluster_discordance,
    run_sensitivity,
    tasks_for_threshold,
    tasks_needed,
)
from tests.release.helpers import row, table

IMPROVE = GatePolicy(rule="improvement")


def _agent_rows(arm: str, params: dict, n_tasks: int, suite_seed: int) -> list[dict]:
    """Trial rows exactly as the simulated agent decides them (its own draw functions)."""
    import random

    out = []
    for j in range(n_tasks):
        task = SimpleNamespace(id=f"t{j:03d}", simulated={})
        p = task_probability(params, task)
        seed = trial_seed(suite_seed, task.id, 0)
        ok = random.Random(trial_draw_seed(params, seed, arm)).random() < p
        out.append(row(arm, task.id, ok, seed=seed, cluster=f"c{j % 25}"))
    return out


def test_simulated_arms_draw_independently_unless_asked():
    assert trial_draw_seed({}, 7, "base") != trial_draw_seed({}, 7, "base-aa")
    crn = {"common_random_numbers": True}
    assert trial_draw_seed(crn, 7, "base") == trial_draw_seed(crn, 7, "base-aa") == 7


def test_every_param_the_simulated_draws_read_is_declared():
    """A key the draw functions read but ``SimulatedParams`` lacks would be refused at load
    (extra="forbid"), as ``common_random_numbers`` once was."""
    from harness.agents.simulated import SimulatedParams

    class Reads(dict):
        seen: set[str] = set()

        def get(self, key, default=None):
            self.seen.add(key)
            return super().get(key, default)

        def __contains__(self, key):
            self.seen.add(key)
            return super().__contains__(key)

    params = Reads()
    task = SimpleNamespace(id="t0", simulated={})
    task_probability(params, task, variant="v1")
    trial_draw_seed(params, 7, "base")
    assert params.seen and params.seen <= set(SimulatedParams.model_fields)
    assert SimulatedParams.model_validate({"common_random_numbers": True}).common_random_numbers


def test_aa_false_regression_rate_with_the_independent_agent_is_at_most_alpha():
    params = {"a": 3.0, "b": 2.0}
    runs, regressions = 300, 0
    level = interval_level(IMPROVE)
    for s in range(runs):
        a = _agent_rows("base", params, 120, s)
        b = _agent_rows("base-aa", params, 120, s)
        c = paired_comparison(table(a), table(b), confidence=level)
        regressions += primary_verdict(c, IMPROVE)[0] == "regression"
    assert regressions / runs <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)


def test_common_random_numbers_give_a_flagged_degenerate_floor():
    crn = {"a": 3.0, "b": 2.0, "common_random_numbers": True}
    rows = _agent_rows("base", crn, 60, 1) + _agent_rows("cand", crn, 60, 1)
    rows += _agent_rows("base-aa", crn, 60, 1)
    config = {"suite": {"arms": [{"name": "base-aa", "params": crn}]}}
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand", "base-aa"], config=config)
    floor = g["noise_floor"]
    assert floor["degenerate"] and "common_random_numbers" in floor["degenerate_reason"]
    assert floor["hi"] > floor["lo"]  # a bound, never a zero-width interval
    assert any("degenerate" in w for w in g["warnings"])
    g = evaluate_gate(table(rows), IMPROVE, arms=["base", "cand", "base-aa"])  # no config: by data
    assert (
        g["noise_floor"]["degenerate"] and "exactly zero" in g["noise_floor"]["degenerate_reason"]
    )


def _binary_rows(rng, p: float, n: int, arm: str = "cand") -> list[dict]:
    return [row(arm, f"t{j:03d}", rng.random() < p) for j in range(n)]


def test_threshold_gate_verdicts_exit_codes_and_posterior():
    from harness.stats import posterior_prob_above

    rng = np.random.default_rng(4)
    policy = GatePolicy(rule="threshold", bar=0.8)
    good = _binary_rows(rng, 0.95, 200)
    g = evaluate_gate(table(good), policy, arms=["cand"])
    assert g["verdict"] == "improvement" and g["verdict_label"] == "meets the bar"
    assert g["exit_code"] == 0 and g["threshold"]["lo"] > 0.8
    th = g["threshold"]
    s = round(th["estimate"] * 200)
    # tasks as units: n_eff = n − 1 from the CR2 SE, so the posterior is the estimands guide's at n ≈ 200
    assert th["p_above_bar"] == pytest.approx(posterior_prob_above(s, 200, 0.8), abs=0.02)
    bad = evaluate_gate(table(_binary_rows(rng, 0.6, 200)), policy, arms=["cand"])
    assert bad["verdict"] == "regression" and bad["verdict_label"] == "below the bar"
    assert bad["exit_code"] == 12
    close = evaluate_gate(table(_binary_rows(rng, 0.8, 60)), policy, arms=["cand"])
    assert close["verdict"] == "inconclusive" and close["exit_code"] == 11


def test_threshold_plan_has_its_power_in_simulation():
    plan = tasks_for_threshold(0.9, 0.8)
    n, reps = plan["tasks"], 400
    policy = GatePolicy(rule="threshold", bar=0.8)
    rng = np.random.default_rng(5)
    met = 0
    for _ in range(reps):
        t = threshold_check(
            table(_binary_rows(rng, 0.9, n)),
            policy,
            cluster_key="cluster",
            denominator="failure",
            confidence=0.95,
        )
        met += t["verdict"] == "improvement"
    assert abs(met / reps - 0.8) <= 3 * math.sqrt(0.8 * 0.2 / reps)


def test_sequential_gate_spends_alpha_per_look():
    rng = np.random.default_rng(6)
    rows = [row("base", f"t{j}", rng.random() < 0.7) for j in range(100)]
    rows += [row("cand", f"t{j}", rng.random() < 0.7) for j in range(100)]
    policy = GatePolicy(rule="improvement", sequential=True)
    g = evaluate_gate(table(rows), policy, arms=["base", "cand"], look=10)
    assert g["sequential"]["alpha"] == pytest.approx(0.05 * 6 / (math.pi**2 * 100))
    assert g["primary"]["interval_level"] == pytest.approx(1 - 2 * g["sequential"]["alpha"])
    planned = GatePolicy(rule="improvement", sequential=True, looks=5)
    late = evaluate_gate(table(rows), planned, arms=["base", "cand"], look=6)
    assert late["verdict"] == "inconclusive" and "budget is spent" in late["reasons"][0]


def test_discordant_count_is_discordance_times_tasks():
    out = tasks_needed(0.7, 0.05, 0.10)
    row10 = out["paired"][0]
    assert row10["tasks"] == 307 and row10["discordant_tasks"] == 31  # 10% of 307
    # the simulated share of discordant tasks at that design is 10%, and the paired z-test
    # on 307 tasks has about the planned 80% power
    rng = np.random.default_rng(7)
    reps, hits, disc = 600, 0, []
    f, b = (0.10 + 0.05) / 2, (0.10 - 0.05) / 2
    for _ in range(reps):
        d = rng.choice([1, -1, 0], size=307, p=[f, b, 1 - f - b])
        disc.append(np.count_nonzero(d))
        hits += d.mean() / (d.std(ddof=1) / math.sqrt(307)) > 1.959964
    assert np.mean(disc) == pytest.approx(row10["discordant_tasks"], abs=1.0)
    assert abs(hits / reps - 0.8) <= 3 * math.sqrt(0.16 / reps)


def _clustered_rows(rng, n_clusters: int, size: int, delta: float, disc: float) -> list[dict]:
    rows = []
    for c in range(n_clusters):
        dc = delta + rng.choice([-0.04, 0.04])  # cluster-level effect heterogeneity
        f, b = (disc + dc) / 2, (disc - dc) / 2
        for i in range(size):
            t = f"c{c}-t{i}"
            d = rng.choice([1, -1, 0], p=[f, b, 1 - f - b])
            a = 0 if d == 1 else 1 if d == -1 else int(rng.random() < 0.6)
            rows.append(row("base", t, a, cluster=f"c{c}"))
            rows.append(row("cand", t, a + d, cluster=f"c{c}"))
    return rows


def test_cluster_detectable_effect_uses_cluster_discordance_and_holds_power():
    rng = np.random.default_rng(8)
    n_clusters, size, disc = 40, 6, 0.30
    # a large pilot measures the cluster-level discordance; the MDE is read off it (the pilot
    # runs near the effect it finds, since D = Var + δ² is measured at the pilot's effect)
    pilot = _clustered_rows(rng, 400, size, 0.09, disc)
    s = run_sensitivity(
        table([r for r in pilot if r["arm"] == "base"]),
        table([r for r in pilot if r["arm"] == "cand"]),
    )
    d_cl = s["cluster_discordance"]
    assert d_cl < s["discordance"]  # independent tasks within clusters average out
    z = 1.959964 + 0.841621
    mde = z * math.sqrt(d_cl / (n_clusters + z * z))
    task_level = z * math.sqrt(s["discordance"] / (n_clusters + z * z))  # the old reading
    assert mde < 0.7 * task_level
    reps, hits = 300, 0
    for _ in range(reps):
        rows = _clustered_rows(rng, n_clusters, size, mde, disc)
        a = [r for r in rows if r["arm"] == "base"]
        b = [r for r in rows if r["arm"] == "cand"]
        diffs = [y["passed"] - x["passed"] for x, y in zip(a, b, strict=True)]
        totals = np.array([sum(diffs[c * size : (c + 1) * size]) / size for c in range(n_clusters)])
        hits += totals.mean() / (totals.std(ddof=1) / math.sqrt(n_clusters)) > 1.959964
    assert abs(hits / reps - 0.8) <= 3 * math.sqrt(0.16 / reps)
    assert cluster_discordance([1, -1, 0, 0], ["a", "a", "b", "b"]) == 0.0
