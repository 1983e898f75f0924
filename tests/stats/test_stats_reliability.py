"""The metrics guide's reliability profile and the reliability helpers."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats import (
    consistency,
    expected_calibration_error,
    harm_rate,
    robustness_drop,
    unstable_tasks,
)

# metrics guide: 4 tasks x 3 runs: task, ok, ok on a paraphrase, stated confidence, harm severity
RUNS = [
    ("t1", 1, 1, 0.90, 0),
    ("t1", 1, 1, 0.85, 0),
    ("t1", 1, 0, 0.90, 0),
    ("t2", 1, 0, 0.80, 0),
    ("t2", 0, 0, 0.75, 1),
    ("t2", 1, 1, 0.80, 0),
    ("t3", 0, 0, 0.30, 0),
    ("t3", 0, 0, 0.40, 0),
    ("t3", 1, 0, 0.50, 0),
    ("t4", 0, 0, 0.90, 3),
    ("t4", 1, 1, 0.90, 0),
    ("t4", 0, 0, 0.85, 1),
]
TASK = np.array([r[0] for r in RUNS])
OK = np.array([r[1] for r in RUNS])
OK_PERTURB = np.array([r[2] for r in RUNS])
CONF = np.array([r[3] for r in RUNS])
SEVERITY = np.array([r[4] for r in RUNS])


def test_seed_000_reliability_profile() -> None:
    # metrics guide output: accuracy 58%, consistency pass^3 25%, robustness drop -25 points,
    # ECE 0.15, harmful runs 25% (severity-weighted 0.42 per run)
    assert round(100 * OK.mean()) == 58
    assert round(100 * consistency(TASK, OK, 3)) == 25
    drop = robustness_drop(OK, OK_PERTURB)
    assert round(100 * drop.estimate) == -25
    assert round(expected_calibration_error(CONF, OK, bins=(0.0, 0.5, 0.8, 1.01)), 2) == 0.15
    share, weighted = harm_rate(SEVERITY)
    assert round(100 * share) == 25 and round(weighted, 2) == 0.42


def test_robustness_interval_and_clusters() -> None:
    drop = robustness_drop(OK, OK_PERTURB)
    assert drop.ci[0] < drop.estimate < drop.ci[1]
    by_task = robustness_drop(OK, OK_PERTURB, clusters=TASK)
    assert by_task.estimate == pytest.approx(drop.estimate)
    assert by_task.se != pytest.approx(drop.se)


def test_consistency_is_mean_pass_hat_k() -> None:
    # k = 1 is accuracy; k = 2 counts pairs of runs
    assert consistency(TASK, OK, 1) == pytest.approx(OK.mean())
    # t1: 3/3 -> 1; t2: 2/3 -> 1/3; t3, t4: 1/3 -> 0
    assert consistency(TASK, OK, 2) == pytest.approx((1 + 1 / 3) / 4)
    with pytest.raises(ValueError):
        consistency(TASK, OK, 4)


def test_ece_equal_width_bins() -> None:
    conf = np.array([0.05, 0.15, 0.95, 1.0, 0.55])
    y = np.array([0, 0, 1, 1, 1])
    # bins of width 0.1: [0,.1): .05 vs 0; [.1,.2): .15 vs 0; [.5,.6): .55 vs 1;
    # [.9, 1]: mean .975 vs 1
    expected = (0.05 + 0.15 + 0.45 + 2 * 0.025) / 5
    assert expected_calibration_error(conf, y, bins=10) == pytest.approx(expected)
    # perfectly calibrated in every bin -> 0
    assert expected_calibration_error([0.5, 0.5], [0, 1], bins=4) == pytest.approx(0.0)


def test_unstable_tasks_and_harm_errors() -> None:
    # eval-harness guide: a 2/5 task is unstable; here t2, t3 and t4 are mixed, t1 is 3/3
    assert unstable_tasks(TASK, OK).tolist() == ["t2", "t3", "t4"]
    with pytest.raises(ValueError):
        harm_rate([-1, 0])
