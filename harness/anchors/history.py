"""A suite's history as a systems × tasks matrix, the 2PL fit made from it, and the
leave-one-run-out check of anchor (and random) subsets against the full runs.

A system is one arm of one finished run. Its results on a task count only when the run ran
the task as it is now (the stored task config hashes alike): a task edited since is a new
task, and its old results describe another one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.config.subset import FitRecord, task_hash


@dataclass
class History:
    """Per system (run, arm): successes and counted trials per current task."""

    tasks: list[str]
    systems: list[tuple[str, str]] = field(default_factory=list)
    """(run id, arm), newest run first."""
    successes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    trials: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


def read_history(
    store: object, suite: str, current: dict[str, str], max_runs: int = 1000
) -> History:
    """Every finished run of ``suite`` in the store, on the tasks of ``current`` (id → task
    hash). Unresolved trials count as failures (the default denominator)."""
    from harness.analysis.load import load_run_table
    from harness.release.compare import task_counts

    tasks = sorted(current)
    col = {t: i for i, t in enumerate(tasks)}
    rows_s: list[np.ndarray] = []
    rows_m: list[np.ndarray] = []
    systems: list[tuple[str, str]] = []
    for run in store.list_runs(suite, limit=max_runs):  # type: ignore[attr-defined]
        if run.status != "finished":
            continue
        stored = (run.config or {}).get("tasks") or {}
        same = {t for t, doc in stored.items() if t in col and task_hash(doc) == current[t]}
        table = load_run_table(store, run.id).trials.originals()
        for arm in table.arm.present():
            ids, passes, counted, _ = task_counts(table.of_arm(arm))
            s, m = np.zeros(len(tasks)), np.zeros(len(tasks))
            for t, k, n in zip(ids, passes, counted, strict=True):
                if t in same:
                    s[col[t]], m[col[t]] = k, n
            if m.sum() > 0:
                rows_s.append(s)
                rows_m.append(m)
                systems.append((run.id, str(arm)))
    if not systems:
        return History(tasks)
    return History(tasks, systems, np.array(rows_s), np.array(rows_m))


RECENT = 5
"""Systems whose abilities say where anchors should be informative (the newest ones)."""


def fit_record(history: History, current: dict[str, str]) -> FitRecord:
    """Fit 2PL to the history; the record a subset draw and the report read, with quality."""
    from harness.stats.irt import fit_2pl

    fit = fit_2pl(history.successes, history.trials)
    ran = history.trials.sum(0)
    rates = np.where(ran > 0, history.successes.sum(0) / np.maximum(ran, 1), np.nan)
    t = history.tasks
    record: FitRecord = {
        "a": {x: float(v) for x, v in zip(t, fit.a, strict=True)},
        "b": {x: float(v) for x, v in zip(t, fit.b, strict=True)},
        "pass_rate": {x: float(v) for x, v in zip(t, np.nan_to_num(rates, nan=0.5), strict=True)},
        "task_hash": dict(current),
        "recent_theta": [float(v) for v in fit.theta[:RECENT]],
    }
    quality = {
        "se_a": {x: float(v) for x, v in zip(t, fit.se_a, strict=True)},
        "se_b": {x: float(v) for x, v in zip(t, fit.se_b, strict=True)},
        "unplaced": {t[i]: why for i, why in fit.unplaced.items()},
        "systems": [list(s) for s in history.systems],
        "converged": fit.converged,
        "iterations": fit.iterations,
        "loglik": fit.loglik,
    }
    return {**record, "quality": quality}  # type: ignore[typeddict-unknown-key]


@dataclass(frozen=True)
class Check:
    """One held-out system: its full score and what each subset predicted for it."""

    run: str
    arm: str
    actual: float
    anchors: tuple[float, float, float]
    random: tuple[float, float, float]


def leave_one_run_out(
    history: History, n: int, confidence: float = 0.95, seed: int = 0
) -> list[Check]:
    """For each run that ran every task: fit on the other runs, pick n anchors (most
    informative at the remaining newest abilities), predict the held-out run's full score
    from its anchor results; and, beside it, from a random subset of n of its tasks. The
    truth compared against is the run's own full-suite mean of per-task rates."""
    from harness.stats import subset as sub
    from harness.stats.irt import ability, fit_2pl, most_informative, predicted_score

    rng = np.random.default_rng(seed)
    runs = list(dict.fromkeys(r for r, _ in history.systems))
    out: list[Check] = []
    for run in runs:
        held = [i for i, (r, _) in enumerate(history.systems) if r == run]
        rest = [i for i, (r, _) in enumerate(history.systems) if r != run]
        if len(rest) < 2:
            continue
        fit = fit_2pl(history.successes[rest], history.trials[rest])
        picked = most_informative(fit.a, fit.b, fit.theta[:RECENT], n)
        for i in held:
            s, m = history.successes[i], history.trials[i]
            if np.any(m == 0):
                continue  # not a full run of today's tasks: no truth to compare with
            rates = s / m
            est = ability(s[picked], m[picked], fit.a[picked], fit.b[picked])
            score = predicted_score(est, fit.a, fit.b, confidence)
            drawn = rng.choice(rates.size, n, replace=False)
            within = np.where(
                m[drawn] > 1,
                rates[drawn] * (1 - rates[drawn]) / np.maximum(m[drawn] - 1, 1),
                np.nan,
            )
            r = sub.subset_estimate(rates[drawn], rates.size, within, confidence)
            out.append(
                Check(
                    run,
                    history.systems[i][1],
                    float(rates.mean()),
                    (score.estimate, score.lo, score.hi),
                    (r.estimate, r.lo, r.hi),
                )
            )
    return out


def check_summary(checks: list[Check]) -> dict[str, dict[str, float]]:
    """Mean absolute error, interval coverage and mean width per method."""
    out = {}
    for name in ("anchors", "random"):
        rows = np.array([getattr(c, name) for c in checks]) if checks else np.zeros((0, 3))
        truth = np.array([c.actual for c in checks])
        if not len(rows):
            out[name] = {"mae": float("nan"), "coverage": float("nan"), "width": float("nan")}
            continue
        out[name] = {
            "mae": float(np.mean(np.abs(rows[:, 0] - truth))),
            "coverage": float(np.mean((rows[:, 1] <= truth) & (truth <= rows[:, 2]))),
            "width": float(np.mean(rows[:, 2] - rows[:, 1])),
        }
    return out
