"""Anchors are chosen by one half of the history and scored by the other's fit: on a
seeded planted-2PL world the shipped path (fit_record → choose → model_score) covers, where
one fit choosing and scoring (the winner's curse on the chosen tasks' a) undercovers."""

from __future__ import annotations

import numpy as np

from harness.analysis.full_suite import model_score
from harness.anchors.fits import choose
from harness.anchors.history import History, fit_record
from harness.config.subset import FitRecord, Subset
from harness.stats import irt

N_TASKS, PAST, ARMS = 400, 40, 2


def _world(seed: int) -> tuple[np.ndarray, np.ndarray, History]:
    """A planted 2PL suite and its history: 20 runs of 2 arms each, newest first."""
    rng = np.random.default_rng(seed)
    a, b = np.exp(rng.normal(0, 0.3, N_TASKS)), rng.normal(0, 1, N_TASKS)
    s = rng.binomial(1, irt.p2pl(rng.normal(0, 1, PAST)[:, None], a, b)).astype(float)
    systems = [(f"run{j // ARMS:02d}", f"arm{j % ARMS}") for j in range(PAST)]
    tasks = [f"t{i:03d}" for i in range(N_TASKS)]
    return a, b, History(tasks, systems, s, np.ones_like(s))


def _same_fit(history: History) -> FitRecord:
    """The record as it was before the split: one fit picks and scores."""
    fit = irt.fit_2pl(history.successes, history.trials)
    t = history.tasks
    return {
        "a": dict(zip(t, map(float, fit.a), strict=True)),
        "b": dict(zip(t, map(float, fit.b), strict=True)),
        "recent_theta": [float(v) for v in fit.theta[:5]],
    }


def _coverage(record: FitRecord, a: np.ndarray, b: np.ndarray, n: int, seed: int) -> float:
    """Share of 95% intervals, over new systems run on the record's n anchors, that hold
    the system's full-suite expected score."""
    rng = np.random.default_rng(seed)
    ids = sorted(record["a"])
    picked = choose(Subset(method="anchors", n=n), ids, record, n)
    at = [ids.index(t) for t in picked]
    hits = []
    for theta in rng.normal(0, 1, 150):
        p = irt.p2pl(theta, a, b)
        y = rng.binomial(1, p[at]).astype(float)
        _, score = model_score(record, picked, y, np.ones(n), ids)
        hits.append(score.lo <= p.mean() <= score.hi)
    return float(np.mean(hits))


def test_choosing_and_scoring_by_different_halves_covers() -> None:
    shipped, same = [], []
    for seed in range(6):
        a, b, history = _world(seed)
        record = fit_record(history, {t: "h" for t in history.tasks}, seed=seed)
        shipped.append(_coverage(record, a, b, 40, seed))
        same.append(_coverage(_same_fit(history), a, b, 40, seed))
    # 900 intervals each; coverage given one world's fit varies by ~3 pts from world to
    # world, so the six worlds' mean is good to ~1.2 pts. Measured: 93.0% against 84.4%.
    assert np.mean(shipped) >= 0.905, shipped
    assert np.mean(same) <= 0.88, same


def test_the_split_is_by_run_seeded_and_recorded() -> None:
    _, _, history = _world(0)
    record = fit_record(history, {t: "h" for t in history.tasks}, seed=5)
    split = record["split"]
    assert split["seed"] == 5 and split["unit"] == "run"
    chose = {tuple(x) for x in split["choose"]}
    scored = {tuple(x) for x in split["score"]}
    assert not chose & scored and chose | scored == set(history.systems)
    assert len(chose) == len(scored) == PAST // 2
    # every arm of a run is in one half
    assert not {r for r, _ in chose} & {r for r, _ in scored}
    # the two halves' fits differ, the same seed repeats, another seed splits otherwise
    assert record["choose"]["a"] != record["a"]
    again = fit_record(history, {t: "h" for t in history.tasks}, seed=5)
    assert again["split"] == split and again["a"] == record["a"]
    other = fit_record(history, {t: "h" for t in history.tasks}, seed=6)
    assert {tuple(x) for x in other["split"]["choose"]} != chose


def test_anchors_are_picked_by_the_choosing_half() -> None:
    ids = [f"t{i}" for i in range(6)]
    record: FitRecord = {
        "a": {t: 1.0 for t in ids},
        "b": {t: float(i) for i, t in enumerate(ids)},  # the scoring half: t0 at θ = 0
        "choose": {
            "a": {t: 1.0 for t in ids},
            "b": {t: float(5 - i) for i, t in enumerate(ids)},  # the choosing half: t5
            "recent_theta": [0.0],
            "pass_rate": {t: 0.5 if t == "t4" else 0.9 for t in ids},
        },
    }
    assert choose(Subset(method="anchors", n=1), ids, record, 1) == ["t5"]
    assert choose(Subset(method="midrange", n=1, band=(0.4, 0.6)), ids, record, 1) == ["t4"]
    old = {k: v for k, v in record.items() if k != "choose"}  # a fit from before the split
    assert choose(Subset(method="anchors", n=1), ids, old, 1) == ["t0"]  # type: ignore[arg-type]
