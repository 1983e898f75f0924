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


def test_threshold_plan_has_its_power_in_the_gate():
    """The tasks ``plan --bar`` prints give the threshold gate (its own rows path) the power
    the plan promises."""
    plan = tasks_for_threshold(0.9, 0.8)
    n, reps = plan["tasks"], 400
    assert 0.78 <= plan["simulated_power"] <= 0.85 and "cautious" in plan["rule"]
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
    assert abs(met / reps - plan["simulated_power"]) <= 3 * math.sqrt(0.8 * 0.2 / reps)


def test_sequential_gate_pools_the_season_and_restarts():
    """Nightly: each night alone is inconclusive, the season's evidence is not; a regression
    seen by the detector is flagged, and the night after it a new season starts."""
    from harness.release.nightly import Night

    rng = np.random.default_rng(6)
    policy = GatePolicy(rule="improvement", sequential=True)

    def night_rows(lift: float) -> list[dict]:
        p = rng.uniform(0.3, 0.9, 100)
        out = [row("base", f"t{j}", rng.random() < p[j]) for j in range(100)]
        return out + [row("cand", f"t{j}", rng.random() < p[j] + lift) for j in range(100)]

    alone = evaluate_gate(table(night_rows(0.08)), policy, arms=["base", "cand"])
    assert alone["sequential"]["look"] == 1
    earlier = [Night(f"r{k}", 0.08, 0.06) for k in range(6)]
    g = evaluate_gate(table(night_rows(0.08)), policy, arms=["base", "cand"], earlier=earlier)
    assert g["verdict"] == "improvement" and g["sequential"]["look"] == 7
    assert g["sequential"]["ship_evidence"] >= g["sequential"]["ship_threshold"]
    null = [Night(f"r{k}", 0.0, 0.06) for k in range(20)]
    bad = [Night(f"d{k}", -0.12, 0.06) for k in range(8)]
    readings = [
        evaluate_gate(
            table(night_rows(-0.12)), policy, arms=["base", "cand"], earlier=null + bad[:k]
        )
        for k in range(8)
    ]
    verdicts = [g["verdict"] for g in readings]
    first = verdicts.index("regression")  # flagged within a few bad nights
    assert first <= 6 and all(v != "regression" for v in verdicts[:1])
    g = readings[first]
    assert "evidence from night" in g["reasons"][0] and g["exit_code"] == 12
    assert "restarts" in g["sequential"]["restart"]
    # the night after the alarm a new season starts: its look count starts over
    if first + 1 < len(readings):
        assert readings[first + 1]["sequential"]["look"] < g["sequential"]["look"]


def test_paired_plan_has_its_power_in_the_gate():
    out = tasks_needed(0.7, 0.05, 0.10)
    row10 = out["paired"][0]
    n = row10["tasks"]
    assert 0.78 <= row10["simulated_power"] <= 0.85 and "McNemar" in out["rule"]
    rng = np.random.default_rng(7)
    reps, hits = 200, 0
    f, b = (0.10 + 0.05) / 2, (0.10 - 0.05) / 2
    for _ in range(reps):
        cells = rng.choice(4, size=n, p=[0.7 - b, b, f, 1 - 0.7 - f])
        rows = [row("base", f"t{i}", c in (0, 1)) for i, c in enumerate(cells)]
        rows += [row("cand", f"t{i}", c in (0, 2)) for i, c in enumerate(cells)]
        hits += (
            evaluate_gate(table(rows), IMPROVE, arms=["base", "cand"])["verdict"] == "improvement"
        )
    assert abs(hits / reps - row10["simulated_power"]) <= 3 * math.sqrt(0.16 / reps)


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


def test_run_plan_is_the_power_of_the_gate_on_the_next_run():
    """``plan --run``: at the lift it prints, fresh runs of the same suite pass the gate about
    as often as the plan promises (the benchmark measures it over many suites)."""
    from harness.stats import GateRule
    from harness.stats.cluster_design import ClusterDesign
    from harness.stats.gate_rule import IMPROVEMENT

    rng = np.random.default_rng(8)
    n_clusters, size = 40, 6
    codes = np.repeat(np.arange(n_clusters), size)
    eta = 0.8 + rng.normal(0, 0.6, n_clusters)[codes] + rng.normal(0, 0.8, codes.size)
    p = 1 / (1 + np.exp(-eta))
    pilot = []
    for i, c in enumerate(codes):
        for arm in ("base", "cand"):
            pilot.append(row(arm, f"t{i:03d}", rng.random() < p[i], cluster=f"c{c}"))
    s = run_sensitivity(
        table([r for r in pilot if r["arm"] == "base"]),
        table([r for r in pilot if r["arm"] == "cand"]),
    )
    assert s["mde"] is not None and 0.78 <= s["simulated_power"] <= 0.85
    assert "McNemar" in s["rule"] and "posterior" in s["model"]
    lo, hi = -2.0, 6.0
    het = rng.normal(0, 0.5, (300, n_clusters))[:, codes]
    for _ in range(40):  # the lift that plants exactly the printed effect
        mid = (lo + hi) / 2
        gain = float(np.mean(1 / (1 + np.exp(-(eta + mid + het))))) - float(p.mean())
        lo, hi = (mid, hi) if gain < s["mde"] else (lo, mid)
    q = 1 / (1 + np.exp(-(eta + lo + het)))
    xa = (rng.random(q.shape) < p).astype(float)
    xb = (rng.random(q.shape) < q).astype(float)
    verdicts = GateRule("improvement").paired(ClusterDesign.of(codes), xa, xb)
    assert 0.65 <= np.mean(verdicts == IMPROVEMENT) <= 0.92
    assert cluster_discordance([1, -1, 0, 0], ["a", "a", "b", "b"]) == 0.0
