"""Cost frontiers, retry baselines and the rerun trap (agent-evaluation guide)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats import (
    beta_from_mean_concentration,
    beta_retry_success,
    budget_matched_retry,
    mixture,
    pareto_front,
    rerun_trap,
    retry_success,
    upper_convex_hull,
)


def test_seed_003_dominance() -> None:
    # agent-evaluation guide: an agent at 70% for $6 dominates one at 68% for $15
    assert pareto_front([0.70, 0.68], [6.0, 15.0]).tolist() == [0]
    # four agents: the ensemble is dominated
    acc = [0.55, 0.66, 0.70, 0.64]
    cost = [0.03, 1.50, 6.00, 9.00]
    assert pareto_front(acc, cost).tolist() == [0, 1, 2]


def test_pareto_against_brute_force() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        acc = rng.integers(0, 6, 12) / 5
        cost = rng.integers(1, 6, 12).astype(float)
        dominated = {
            i
            for i in range(12)
            for j in range(12)
            if acc[j] >= acc[i] and cost[j] <= cost[i] and (acc[j] > acc[i] or cost[j] < cost[i])
        }
        assert set(pareto_front(acc, cost).tolist()) == set(range(12)) - dominated


def test_seed_003_mixture_and_hull() -> None:
    # agent-evaluation guide: half and half of $0.03 at 55% and $1.50 at 66% gives $0.765 at 60.5%
    acc, cst = mixture(0.55, 0.03, 0.66, 1.50, 0.5)
    assert acc == pytest.approx(0.605) and cst == pytest.approx(0.765)
    # an agent at 60% for $1.00 is Pareto-optimal but beaten by a mixture: off the hull
    accs = [0.55, 0.60, 0.66, 0.70]
    costs = [0.03, 1.00, 1.50, 6.00]
    assert pareto_front(accs, costs).tolist() == [0, 1, 2, 3]
    assert upper_convex_hull(accs, costs).tolist() == [0, 2, 3]
    # with the origin (HAL's convention) a cheap weak agent can fall below the chord
    assert upper_convex_hull([0.10, 0.60], [0.5, 1.0], include_origin=True).tolist() == [1]
    assert upper_convex_hull([0.10, 0.60], [0.5, 1.0]).tolist() == [0, 1]


def test_seed_003_retry_baseline() -> None:
    # agent-evaluation guide: 1 cent per try, solves half the time, 3 tries: 0.875 success, 1.75 tries
    success, tries = retry_success(0.5, 3)
    assert success == pytest.approx(0.875) and tries == pytest.approx(1.75)
    k, succ, spend = budget_matched_retry(0.5, 0.01, 0.03)
    assert (k, succ, spend) == (3, pytest.approx(0.875), pytest.approx(0.0175))
    # heterogeneity: the honest baseline averages per task, never uses the mean rate
    p = np.array([0.0, 0.0, 0.9, 1.0])
    assert retry_success(p, 5)[0] < retry_success(p.mean(), 5)[0]
    assert retry_success(0.0, 4) == (0.0, 4.0)


def test_retry_by_simulation() -> None:
    rng = np.random.default_rng(1)
    p, k = 0.3, 4
    draws = rng.random((200_000, k)) < p
    solved = draws.any(axis=1)
    first = np.where(solved, draws.argmax(axis=1) + 1, k)
    success, tries = retry_success(p, k)
    assert solved.mean() == pytest.approx(success, abs=0.004)
    assert first.mean() == pytest.approx(tries, abs=0.01)


def test_seed_003_retried_small_agent() -> None:
    # agent-evaluation guide: the retried small agent (mean 0.42; concentration 1.5 reproduces the curve)
    # climbs from 42% to 82% at 10 tries, spending under 4 cents, and to 91% at 30
    a, b = beta_from_mean_concentration(0.42, 1.5)
    assert round(beta_retry_success(a, b, 1)[0], 2) == 0.42
    s10, t10 = beta_retry_success(a, b, 10)
    assert round(s10, 2) == 0.82 and t10 < 4.0
    assert round(beta_retry_success(a, b, 30)[0], 2) == 0.91
    # agrees with averaging retry_success over many tasks drawn from that Beta
    p = np.random.default_rng(0).beta(a, b, 400_000)
    s_mc, t_mc = retry_success(p, 10)
    assert s_mc == pytest.approx(s10, abs=0.003) and t_mc == pytest.approx(t10, abs=0.02)


def test_seed_003_rerun_trap_formulas() -> None:
    # agent-evaluation guide: p = 0.6, 5% crashes: 0.57 scored as failures; 0.5985 with one rerun of
    # crashes; rerunning every failure gives pass@2 = 1 - (1 - 0.57)^2 = 0.815
    trap = rerun_trap(0.6, 0.05)
    assert trap.crash_as_failure == pytest.approx(0.57)
    assert trap.rerun_crashes == pytest.approx(0.5985)
    assert round(trap.rerun_failures, 3) == 0.815
    assert abs(trap.rerun_crashes - 0.6) < 0.0015  # within 0.15 points of the truth
    assert 21 <= 100 * (trap.rerun_failures - 0.6) < 22  # "21 points too high" (21.5)


def test_rerun_trap_by_simulation() -> None:
    rng = np.random.default_rng(7)
    tasks = 200_000
    p = rng.beta(2.0, 1.5, tasks)
    f = 0.05

    def attempt() -> tuple[np.ndarray, np.ndarray]:
        crashed = rng.random(tasks) < f
        return crashed, ~crashed & (rng.random(tasks) < p)

    crashed, passed = attempt()
    crashed2, passed2 = attempt()
    as_failure = passed.mean()
    rerun_crash = (passed | (crashed & passed2)).mean()
    rerun_fail = (passed | passed2).mean()
    trap = rerun_trap(p, f)
    assert as_failure == pytest.approx(trap.crash_as_failure, abs=0.004)
    assert rerun_crash == pytest.approx(trap.rerun_crashes, abs=0.004)
    assert rerun_fail == pytest.approx(trap.rerun_failures, abs=0.004)
    # heterogeneous tasks: rerunning failures inflates less than for a single 0.6 task
    assert trap.rerun_failures - trap.true_rate < 0.21
