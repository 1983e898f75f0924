"""Nightly history: one suite's runs over time, with intervals, and honest pairing notes.

Eval-harness guide: a baseline from three weeks ago is a fact about a system that no longer exists, and
run-level variance does not shrink with more tasks. So every run's rate carries its interval,
moves between consecutive runs are paired only when the runs can be paired (same tasks,
graders and images), and a move is flagged only when it exceeds the A/A noise floor.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

from harness.analysis.table import Trials
from harness.release.full_suite_rows import (
    estimate_move,
    night,
    subset_headline,
    task_hashes,
    why_not_same_quantity,
)
from harness.release.records import (
    Comparison,
    Fingerprint,
    Headline,
    History,
    HistoryArm,
    HistoryRun,
    Move,
)


def short_hash(value: Any, n: int = 8) -> str:
    """A short stable hash of a JSON-able value ('-' for empty)."""
    if not value:
        return "-"
    blob = json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:n]


def headline(
    trials: Trials,
    confidence: float = 0.95,
    denominator: str = "failure",
    cluster_key: str = "cluster",
) -> Headline:
    """Mean of per-task rates with the shared interval (``harness.stats.mean_estimate``, as
    the report), with n tasks, clusters and trials. One cluster, or ``cluster_key: task``:
    its tasks are the unit."""
    from harness.release.compare import task_rates
    from harness.stats import mean_estimate

    tasks, rates, cl = task_rates(trials, denominator)
    if not tasks:
        return {
            "estimate": None,
            "rate": None,
            "lo": None,
            "hi": None,
            "n": 0,
            "unit": "task",
            "n_tasks": 0,
            "n_trials": len(trials),
        }
    one = len(set(cl)) < 2 or cluster_key == "task"
    e = mean_estimate(rates, None if one else cl, confidence=confidence)
    return {
        "estimate": e.estimate,
        "rate": e.estimate,
        "confidence": confidence,
        "lo": e.lo,
        "hi": e.hi,
        "method": e.method,
        "warning": e.warning,
        "n": len(tasks),
        "unit": "task",
        "n_tasks": len(tasks),
        "n_clusters": len(set(cl)),
        "n_trials": len(trials),
    }


def fingerprint(trials: Trials) -> Fingerprint:
    """What pairing needs to be equal: tasks, grader versions, image ids."""
    versions = trials.grader_versions()
    return {
        "tasks": trials.task_ids.tolist(),
        "graders": sorted(f"{g}={v}" for g, vs in versions.items() for v in vs),
        "images": trials.texts("image"),
    }


def why_unpairable(fa: Fingerprint, fb: Fingerprint) -> list[str]:
    out = []
    if fa["tasks"] != fb["tasks"]:
        a, b = set(fa["tasks"]), set(fb["tasks"])
        out.append(f"different tasks (+{len(b - a)} / -{len(a - b)})")
    if fa["graders"] != fb["graders"]:
        out.append(
            "different graders ("
            + ", ".join(sorted(set(fb["graders"]) - set(fa["graders"])))[:80]
            + ")"
        )
    if fa["images"] != fb["images"]:
        out.append(f"different images ({short_hash(fa['images'])} → {short_hash(fb['images'])})")
    return out


# long: each run's row and its move from the previous run of the same arm come from one walk over
#   the runs in order.
def suite_history(
    runs: list[Any],
    trials_by_run: dict[str, Trials],
    *,
    confidence: float | None = None,
    sequential: bool = False,
) -> History:
    """Runs oldest first; per arm: headline rate with interval, cost, versions, and the move
    from the previous run of the same arm (paired when pairable), flagged against the A/A
    noise floor of the later run when it has one, and read as a regression or improvement
    when its interval excludes 0.

    Read night after night, a fixed 95% interval raises a false regression in most seasons
    (when-not-to-ship guide). ``sequential`` reads each arm's runs as nights instead: the
    e-detector on the recursive residuals of its nightly rate (``harness.release.nightly``),
    evidence pooled over the listed runs since the arm's last unpairable change, at most
    1 − ``confidence`` false alarms per 60 nights; a move's ``call`` is then the detector's.
    ``confidence``: the interval level; default each run's ``report.confidence``, as its
    report uses."""
    from harness.analysis import run_roles, settings_of
    from harness.analysis.paired import aa_floor, compare_arms
    from harness.release.nightly import RESTART, Night
    from harness.release.source import stored_config, suite_config

    entries: list[HistoryRun] = []
    base_levels: list[float] = []
    last: dict[str, tuple[Any, Trials, Fingerprint, HistoryArm]] = {}
    seasons: dict[str, list[Night]] = {}
    for run in sorted(runs, key=lambda r: r.started_at):
        trials = trials_by_run[run.id]
        suite = suite_config(run)
        settings = settings_of(suite, run.trials_per_task).at(confidence)
        base_level = settings.confidence
        base_levels.append(base_level)
        denominator = settings.denominator
        roles = run_roles(suite, list(run.arms or []))
        noise = None
        if roles.baseline and roles.aa:
            noise = aa_floor(
                trials.of_arm(roles.baseline),
                trials.of_arm(roles.aa),
                roles.aa,
                settings,
                stored_config(run),
            )
            if noise is not None:
                noise["floor"] = max(abs(noise["lo"] or 0.0), abs(noise["hi"] or 0.0))
        arms_out: list[HistoryArm] = []
        draw = stored_config(run).get("subset")
        for arm in run.arms:
            ar = trials.of_arm(arm)
            fp = fingerprint(ar)
            costs = ar.cost[~np.isnan(ar.cost)]
            entry: HistoryArm = {
                "arm": arm,
                **headline(ar, base_level, denominator, settings.cluster_key),
                **subset_headline(ar, draw, base_level, denominator),
                "cost_usd": math.fsum(costs.tolist()) if costs.size else None,
                "cost_known_trials": int(costs.size),
                "images": short_hash(fp["images"]),
                "graders": short_hash(fp["graders"]),
                "move": None,
            }
            prev = last.get(arm)
            if prev is not None:
                prun, prows, pfp, prow = prev
                pdraw = stored_config(prun).get("subset")
                problems = why_unpairable(pfp, fp)
                by_estimates = bool(draw or pdraw)
                estimates = False  # a subset run: both estimate one full-suite quantity?
                if problems and by_estimates:
                    hashes = (task_hashes(stored_config(prun)), task_hashes(stored_config(run)))
                    problems = why_not_same_quantity(pfp, pdraw, fp, draw, hashes)
                    estimates = not problems
                if estimates:
                    # a full and a subset run, or two draws: two estimates of one quantity
                    move = estimate_move(prow, entry, prun.id, base_level)
                elif problems:
                    seasons.pop(arm, None)
                    move = {
                        "from_run": prun.id,
                        "paired": False,
                        "cannot_pair": problems,
                    }
                else:
                    c = compare_arms(prows, ar, settings)
                    flagged = None
                    if noise is not None and c["estimate"] is not None:
                        flagged = abs(c["estimate"]) > noise["floor"]
                    move = {
                        "from_run": prun.id,
                        "paired": True,
                        "estimate": c["estimate"],
                        "lo": c["lo"],
                        "hi": c["hi"],
                        "n": c["n"],
                        "unit": c["unit"],
                        "level": base_level,
                        "call": _call(c),
                        "beyond_noise_floor": flagged,
                    }
                entry["move"] = move
                if sequential and "cannot_pair" not in move:
                    first, tonight = _nights(ar, prows, prow, entry, settings, by_estimates)
                    if tonight is not None:
                        season = seasons.setdefault(arm, [])
                        _look(season, move, (prun.id, first), (run.id, tonight), base_level)
                        if move["call"] == "regression":
                            seasons.pop(arm)  # the season restarts on the next night
            last[arm] = (run, ar, fp, entry)
            arms_out.append(entry)
        entries.append(
            {
                "run_id": run.id,
                "started_at": run.started_at.isoformat() if run.started_at else None,
                "status": run.status,
                "config": (run.config_hash or "")[:8],
                "noise_floor": noise,
                "arms": arms_out,
            }
        )
    level = confidence if confidence is not None else (base_levels or [0.95])[-1]
    return {
        "runs": entries,
        "confidence": level,
        "sequential": sequential,
        "schedule": (
            "each arm's runs read as nights: e-detector on the recursive residuals of its "
            f"nightly rate (≤ {1 - level:g} false alarms per 60 nights); {RESTART}"
            if sequential
            else "none: each move at its own level"
        ),
    }


Reading = tuple[float, float]


def _nights(
    ar: Trials, prows: Trials, prow: HistoryArm, entry: HistoryArm, settings, by_estimates: bool
) -> tuple[Reading | None, Reading | None]:
    """(the previous run's night, tonight's) for ``--sequential``: each row's full-suite
    estimate with its own SE where either run is a subset run, else tonight's rate with the
    SE of the per-task drift since the previous run (``drift_reading``)."""
    from harness.release.nightly import drift_reading

    if by_estimates:
        return night(prow), night(entry)
    tonight = drift_reading(ar, prows, settings)
    if tonight is None:
        return None, None
    return _rate_of(prows, tonight[1], settings), tonight


def _look(
    season: list[Any],
    move: Move,
    first: tuple[str, Reading | None],
    tonight: tuple[str, Reading],
    level: float,
) -> None:
    """Add tonight to an arm's season (its first night too when the season is new: its SE
    from the next run where only that run's drift tells it) and read the detector into the
    move."""
    from harness.release.nightly import Night, drift_call

    if not season and first[1] is not None:
        season.append(Night(first[0], *first[1]))
    season.append(Night(tonight[0], *tonight[1]))
    flagged_now, evidence, alarm = drift_call(season, 1 - level)
    move["call"] = "regression" if flagged_now else "none"
    move["look"] = len(season)
    move["evidence"] = evidence
    move["alarm_at"] = alarm


def _rate_of(trials: Trials, se: float, settings) -> tuple[float, float]:
    """(mean per-task rate, ``se``) of a season's first night, whose SE only the next run's
    drift can tell."""
    from harness.release.compare import task_rates

    _, rates, _ = task_rates(trials, settings.denominator)
    return float(sum(rates) / len(rates)) if rates else float("nan"), se


def _call(c: Comparison) -> str:
    """A move read off its interval: 'regression' (all below 0), 'improvement', or 'none'."""
    lo, hi = c.get("lo"), c.get("hi")
    if c.get("estimate") is None or lo is None or hi is None:
        return "none"
    if hi < 0:
        return "regression"
    if lo > 0:
        return "improvement"
    return "none"
