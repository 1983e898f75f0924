"""A suite's history as a systems × tasks matrix, the 2PL fit made from it, and the
leave-one-run-out check of anchor (and random) subsets against the full runs.

A system is one arm of one finished run. Its results on a task count only when the run ran
the task as it is now (the stored task config hashes alike): a task edited since is a new
task, and its old results describe another one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from harness.config.subset import FitRecord, task_hash
from harness.stats.anchor_split import SplitFit, split_fit


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


def _split(history: History, rows: list[int], seed: int) -> tuple[SplitFit, str]:
    """``split_fit`` of those rows of the history: halves by run, or by system when the
    rows come from one run."""
    systems = [history.systems[i] for i in rows]
    by_run = len({r for r, _ in systems}) >= 2
    units = [r if by_run else f"{r}/{arm}" for r, arm in systems]
    fitted = split_fit(history.successes[rows], history.trials[rows], units, seed, RECENT)
    at = np.asarray(rows)
    mapped = replace(fitted, choose_rows=at[fitted.choose_rows], score_rows=at[fitted.score_rows])
    return mapped, "run" if by_run else "system"


def fit_record(history: History, current: dict[str, str], seed: int = 0) -> FitRecord:
    """Fit 2PL to the history, split in two by ``seed``: one half's fit picks anchors
    (``choose``), the other's a and b score a run; the record a subset draw and the report
    read, with the scoring fit's quality."""
    fitted, unit = _split(history, list(range(len(history.systems))), seed)
    t = history.tasks

    def per_task(values: np.ndarray) -> dict[str, float]:
        return {x: float(v) for x, v in zip(t, values, strict=True)}

    def rates(rows: np.ndarray) -> dict[str, float]:
        ran = history.trials[rows].sum(0)
        won = history.successes[rows].sum(0)
        return per_task(np.where(ran > 0, won / np.maximum(ran, 1), 0.5))

    fit, chooser = fitted.score, fitted.choose
    everyone = np.arange(len(history.systems))
    record: FitRecord = {
        "a": per_task(fit.a),
        "b": per_task(fit.b),
        "pass_rate": rates(everyone),
        "task_hash": dict(current),
        "choose": {
            "a": per_task(chooser.a),
            "b": per_task(chooser.b),
            "pass_rate": rates(fitted.choose_rows),
            "recent_theta": [float(v) for v in fitted.recent_theta],
        },
        "split": {
            "seed": seed,
            "unit": unit,
            "choose": [list(history.systems[i]) for i in fitted.choose_rows],
            "score": [list(history.systems[i]) for i in fitted.score_rows],
        },
    }
    quality = {
        "se_a": per_task(fit.se_a),
        "se_b": per_task(fit.se_b),
        "unplaced": {t[i]: why for i, why in fit.unplaced.items()},
        "systems": [list(s) for s in history.systems],
        "converged": fit.converged and chooser.converged,
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
    """For each run that ran every task: fit the other runs' two halves (``fit_record``'s
    split), pick n anchors by one half (most informative at the remaining newest
    abilities), predict the held-out run's full score
    from its anchor results under the other half's fit; and, beside it, from a random subset of n of its tasks. The
    truth compared against is the run's own full-suite mean of per-task rates."""
    from harness.stats import subset as sub
    from harness.stats.irt import ability, most_informative, predicted_score

    rng = np.random.default_rng(seed)
    runs = list(dict.fromkeys(r for r, _ in history.systems))
    out: list[Check] = []
    for run in runs:
        held = [i for i, (r, _) in enumerate(history.systems) if r == run]
        rest = [i for i, (r, _) in enumerate(history.systems) if r != run]
        if len(rest) < 2:
            continue
        fitted, _ = _split(history, rest, seed)
        fit = fitted.score
        picked = most_informative(fitted.choose.a, fitted.choose.b, fitted.recent_theta, n)
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
