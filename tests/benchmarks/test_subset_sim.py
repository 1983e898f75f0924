"""benchmarks/subset_coverage.py: the docs' table is the checked-in result's, and a seeded
live sample reproduces its shape (random subsets cover, anchors are narrower)."""

from __future__ import annotations

import json

import numpy as np

from benchmarks import subset_coverage as sim


def test_the_docs_table_is_the_checked_in_result() -> None:
    assert sim.write_doc(check=True) == 0
    data = json.loads(sim.OUT.read_text())
    cells = {(r["condition"], r["method"], r["n"]): r for r in data["rows"]}
    for cond in sim.CONDITIONS:
        for n in sim.NS:
            assert 0.9 <= cells[(cond, "random", n)]["coverage"] <= 0.98
    for n in sim.NS:  # where 2PL holds: the split history covers, one fit did not
        assert 0.92 <= cells[("2PL holds", "anchors", n)]["coverage"] <= 0.97
        assert cells[("2PL holds", "anchors_same", n)]["coverage"] <= 0.9


def test_a_seeded_live_sample() -> None:
    """One world, 40 new systems, n = 100: random covers 85%+ (40 intervals: ± 3.4 pts at
    95%), anchors are narrower than random and within 6 points on average."""
    rows = sim.simulate(1, 40, seed=3, ns=(100,))
    cells = {(r["condition"], r["method"]): r for r in rows}
    assert cells[("2PL holds", "random")]["coverage"] >= 0.85
    assert cells[("2PL holds", "anchors")]["width"] < cells[("2PL holds", "random")]["width"]
    assert cells[("2PL holds", "anchors")]["mae"] < 0.06


def test_a_gate_on_the_full_suite_estimate_ships_more_than_the_full_run() -> None:
    """benchmarks/subset_gate.py: the checked-in result and a seeded sample agree that the
    full-suite estimate's gate ships a no-better candidate more often as n nears N."""
    from benchmarks import subset_gate as gate

    rows = json.loads(gate.OUT.read_text())["rows"]
    cell = next(r for r in rows if (r["n"], r["trials"]) == (100, 10))
    assert cell["full_suite_estimate"] > 0.075 and cell["paired_subset"] < 0.06
    assert all(r["full_run"] < 0.06 for r in rows)
    live = gate.cell(np.random.default_rng(3), 100, 10, 2000)  # ± 1 pt at 95%
    assert live["full_suite_estimate"] > live["paired_subset"] + 0.01


def test_the_ways_of_choosing_anchors_as_checked_in() -> None:
    """benchmarks/anchor_choice.py: only the split (and no choice at all) covers."""
    from benchmarks import anchor_choice

    rows = json.loads(anchor_choice.OUT.read_text())["rows"]
    cov = {(r["way"], r["history"], r["n"]): r["coverage"] for r in rows}
    for n in anchor_choice.NS:
        assert cov[("split", 40, n)] >= 0.92 and cov[("random", 40, n)] >= 0.92
        assert max(cov[(w, 40, n)] for w in ("same", "shrunk", "split_whole")) <= 0.9
        for history in anchor_choice.SMALL:  # a smaller history: the split still far ahead
            assert cov[("split", history, n)] > cov[("same", history, n)] + 0.05
