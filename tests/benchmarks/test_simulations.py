"""CI recomputes a seeded sample of every simulation behind the docs' tables (seconds each),
and checks the tables in docs/statistics.md are the ones the checked-in results give.

The full runs (thousands of replications per cell) are the commands named in each results
file; here a few of their cells run small, with binomial tolerances.
"""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.tables import DOC, RESULTS, render_doc


def _se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def test_the_docs_tables_are_the_checked_in_results():
    for name in ("coverage_grid", "nightly", "plan_power", "judge_coverage", "prediction"):
        data = json.loads((RESULTS / f"{name}.json").read_text())
        assert data["rows"] and data["settings"]
    text = DOC.read_text()
    assert render_doc(text) == text, "run python -m benchmarks.tables"


def test_coverage_grid_sample():
    from benchmarks.coverage_grid import grid, run_cell

    reps = 500
    for cell, k in grid(quick=True):
        row = run_cell(cell, k, reps, seed=99)
        if "false pass" in row:
            assert row["false pass"] <= 0.05 + 3 * _se(0.05, reps), row
            assert row["false fail"] <= 0.05 + 3 * _se(0.05, reps), row
        assert 0.93 - 3 * _se(0.95, reps) <= row["coverage"] <= 0.97 + 3 * _se(0.95, reps), row


def test_non_inferiority_near_the_top_holds_its_level():
    """The cells where MOVER alone called regressions too often (baseline 0.95, strong cluster
    spread, 3 trials: 5.6-6.1% at 10,000 runs). 6,000 seeded runs (SE 0.28%): with the
    near-edge rule of ``paired_intervals`` the gate calls a regression in 4.3% / 4.0%;
    without it this seed gives 5.7% / 5.5% (fails)."""
    from benchmarks.coverage_grid import Cell, run_cell

    for clusters, equal in ((60, False), (24, True)):
        cell = Cell("non-inferiority", 0.95, clusters, equal, "strong", 3)
        row = run_cell(cell, None, 6000, seed=99)
        assert row["false fail"] <= 0.055 and row["false pass"] <= 0.055, row
        assert 0.93 <= row["coverage"] <= 0.97, row


def test_nightly_sample():
    from benchmarks.nightly import run

    seasons = 200
    rows = {r["reading"]: r for r in run(seasons, 60, 100, 25, 31, 0.10, seed=99)}
    for name in ("gate sequential", "history --sequential"):
        assert rows[name]["false alarms"] <= 0.05 + 3 * _se(0.05, seasons)
        assert rows[name]["caught within 10 nights"] >= 0.8 - 3 * _se(0.8, seasons)
    assert rows["before: gate sequential"]["caught within 10 nights"] < 0.2


def test_plan_sample():
    from benchmarks.plan_power import run_cell

    row = run_cell(60, 0.7, "mild", 1, pilots=3, runs=200, plan_runs=400, seed=99)
    assert row["mean power"] is not None and 0.6 <= row["mean power"] <= 0.97


def test_judge_coverage_sample():
    from benchmarks.judge_coverage import corrected_cell, corrected_grid, win_grid, win_rate_cell

    reps = 120
    for cell in corrected_grid(quick=True):
        row = corrected_cell(*cell, reps, seed=99)
        assert abs(row["coverage"] - 0.95) <= 3 * _se(0.95, reps), row
    for cell in win_grid(quick=True):
        row = win_rate_cell(*cell, 300, seed=99)
        assert abs(row["coverage"] - 0.95) <= 3 * _se(0.95, 300), row


def test_judge_gate_sample():
    """A lenient judge at a true rate on the bar: the raw gate ships far more often than
    the rule allows, the corrected one within it; a strict judge above the bar: the raw
    gate never ships, the corrected one does."""
    from benchmarks.judge_gate import gate_cell, grid

    reps = 150
    lenient, strict = (gate_cell(*cell, reps, seed=99) for cell in grid(quick=True))
    assert lenient["raw ships"] >= 0.1, lenient
    assert lenient["corrected ships"] <= 0.05 + 3 * _se(0.05, reps), lenient
    assert strict["raw ships"] == 0 and strict["corrected ships"] >= 0.3, strict


def test_prediction_sample():
    """The always-pass mixture at 200 tasks: the plain beta-binomial is rejected and the
    prediction covers the truth; the old plain fit does not (a few seeded runs)."""
    from benchmarks.prediction import run_cell

    row = run_cell("always-pass mix", 200, 4, reps=5, seed=99, boot=100)
    assert row["beta rejected"] >= 0.6 and row["shown"] >= 3
    assert row["covered when shown"] >= 0.6 and row["before: coverage"] <= 0.4
    assert row["bound covered"] >= 0.8


def test_prediction_sample_of_truths_no_model_describes():
    """Always- and never-pass tasks beside a Beta (the model with both shares fits them but
    cannot be checked at 4 trials), and logit-normal rates (no model describes them, no check
    on 4 trials tells them from a Beta): the report's interval is widened to the model-free
    bound, which holds the truth (a few seeded runs)."""
    from benchmarks.prediction import run_cell

    for name in ("always- and never-pass mix", "logit-normal"):
        row = run_cell(name, 200, 4, reps=4, seed=99, boot=50)
        assert row["bound covered"] >= 0.75 and row["bound mean width"] < 0.5, row
        wide = row["widened covered when shown"]
        assert wide is None or wide >= 0.75, row


@pytest.mark.parametrize(
    "name", ["coverage_grid", "nightly", "plan_power", "judge_coverage", "prediction"]
)
def test_results_name_the_command_that_made_them(name):
    data = json.loads((RESULTS / f"{name}.json").read_text())
    assert "benchmarks" in json.dumps(data["settings"]) or data["settings"].get("command")
