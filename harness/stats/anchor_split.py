"""Anchors chosen on one half of the history, their tasks scored by a fit of the other half.

Choosing the n most informative tasks by a fit's a²P(1 − P) and then scoring with the same
fit's a and b picks the tasks whose discrimination the data over-stated (a winner's curse):
the chosen a are biased upward, the ability's SE too small, and the predicted score's
interval undercovers (benchmarks/subset_coverage.py: 83–87% at n = 25–100 of 500 where 2PL
holds). Splitting the history's units (runs, or systems) at random into a half that
chooses and a half that estimates makes the scoring fit's errors independent of the choice,
which brings coverage back to 93–95% at the price of a wider interval (the scoring fit has
half the systems). The split is seeded and the record names both halves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats.irt import TwoPLFit, ability, fit_2pl


@dataclass(frozen=True)
class SplitFit:
    """Two 2PL fits of one history: ``choose`` picks the anchors, ``score`` estimates."""

    choose: TwoPLFit
    score: TwoPLFit
    choose_rows: np.ndarray
    """Rows (systems) of the history the choosing fit used."""
    score_rows: np.ndarray
    """Rows the scoring fit used: the others."""
    recent_theta: np.ndarray
    """The newest systems' abilities on the choosing fit's scale (where anchors should be
    informative), from each one's results under that fit's a and b."""
    seed: int


def split_units(units: list[str], seed: int) -> tuple[set[str], set[str]]:
    """The distinct units, shuffled by ``seed``, in two halves (choose, score); the scoring
    half gets the odd one. ValueError: fewer than two units."""
    distinct = sorted(set(units))
    if len(distinct) < 2:
        raise ValueError("a split needs at least two runs (or systems) in the history")
    order = np.random.default_rng(seed).permutation(len(distinct))
    half = len(distinct) // 2
    return {distinct[i] for i in order[:half]}, {distinct[i] for i in order[half:]}


def split_fit(
    successes: np.ndarray, trials: np.ndarray, units: list[str], seed: int = 0, recent: int = 5
) -> SplitFit:
    """Fit each half of the history (rows grouped by ``units``, one per row, newest row
    first); the newest ``recent`` rows' abilities under the choosing fit."""
    s, m = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    if len(units) != s.shape[0]:
        raise ValueError("need one unit per system (row) of the history")
    pick, _ = split_units(units, seed)
    rows_c = np.array([i for i, u in enumerate(units) if u in pick])
    rows_s = np.array([i for i, u in enumerate(units) if u not in pick])
    chooser = fit_2pl(s[rows_c], m[rows_c])
    scorer = fit_2pl(s[rows_s], m[rows_s])
    theta = [
        ability(s[i], m[i], chooser.a, chooser.b).theta
        for i in range(min(recent, s.shape[0]))
        if m[i].sum() > 0
    ]
    return SplitFit(chooser, scorer, rows_c, rows_s, np.array(theta or [0.0]), seed)
