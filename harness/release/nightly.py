"""The gate read night after night (``sequential: true``): evidence that accumulates.

Each gated run of a suite is one night: its primary comparison gives one estimate with its
standard error (``harness.stats.sequential.night_look``: candidate − baseline per task, or the
candidate's own rate under the threshold rule). A season is the run of consecutive nights the
evidence is pooled over; ``RESTART`` says when a new one starts. Within a season:

- a regression ("below the bar") is flagged once the e-detector over the season's nights
  reaches L/α (at most α false alarms per L nights, L = ``looks`` or 60), and stays flagged
  until the season restarts;
- the candidate may ship (improvement, non-inferior, meets the bar) once the confirming test
  martingale over the season's nights reaches 1/α (a false claim at any night has chance at
  most α; it assumes the candidate did not change within the season).

Pure functions over nights; ``harness.release.api.gate_run`` reads the runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.release.records import Sequential

if TYPE_CHECKING:
    from harness.analysis import Settings
    from harness.analysis.table import Trials
    from harness.config.subset import SubsetDraw

RESTART = (
    "a season restarts when the suite's tasks, grader versions or images change, when the "
    "baseline's or candidate's configuration (agent, model, params) changes, on the night "
    "after a regression alarm, and after `looks` nights (default 60)"
)


@dataclass(frozen=True)
class Night:
    """One night's reading of the primary comparison."""

    run_id: str
    estimate: float
    se: float


def night_reading(
    trials_a: Trials, trials_b: Trials, policy, settings: Settings, draw: SubsetDraw | None = None
) -> tuple[float, float] | None:
    """(estimate, SE) of one night: candidate − baseline per paired task (task weights), or
    the candidate's own rate under the threshold rule. On a subset run (``draw``): the full
    suite's estimate of the same quantity with its own SE (``harness.analysis.full_suite``),
    so full and subset nights pool into one season. None when nothing was resolved."""
    from harness.stats.sequential import night_look

    def first(trials: Trials) -> Trials:
        k = settings.phase_one_trials
        return trials if k is None else trials.first(k)

    if draw:
        return _subset_night(first(trials_a), first(trials_b), policy, settings, draw)

    rb = _rates(first(trials_b), settings.denominator)
    if policy.rule == "threshold":
        if not rb:
            return None
        est, se = night_look(np.array([[rb[t] for t in sorted(rb)]]))
        return float(est[0]), float(se[0])
    ra = _rates(first(trials_a), settings.denominator)
    tasks = sorted(set(ra) & set(rb))
    if not tasks:
        return None
    weights = trials_b.per_task("weight").tolist()
    weight = {t: float(w) or 1.0 for t, w in zip(trials_b.task_ids.tolist(), weights, strict=True)}
    d = np.array([[rb[t] - ra[t] for t in tasks]])
    est, se = night_look(d, np.array([weight.get(t, 1.0) for t in tasks]))
    return float(est[0]), float(se[0])


def _subset_night(
    trials_a: Trials, trials_b: Trials, policy, settings: Settings, draw: SubsetDraw
) -> tuple[float, float] | None:
    from harness.analysis.full_suite import full_suite, full_suite_delta

    if policy.rule == "threshold":
        est = full_suite(trials_b, draw, denominator=settings.denominator)
    else:
        est = full_suite_delta(trials_a, trials_b, draw, denominator=settings.denominator)
    value, se = est.get("estimate"), est.get("se")
    if value is None or se is None or not se > 0:
        return None
    return float(value), float(se)


def _rates(trials: Trials, denominator: str) -> dict[str, float]:
    """Task → its success rate (tasks as written with a counted trial)."""
    from harness.release.compare import task_rates

    tasks, rates, _ = task_rates(trials, denominator)
    return dict(zip(tasks, rates, strict=True))


def _null(policy) -> float:
    if policy.rule == "threshold":
        return float(policy.bar)
    if policy.rule == "non-inferiority":
        return -float(policy.margin)
    return 0.0


def season_reading(nights: list[Night], policy) -> tuple[str, str, Sequential]:
    """(verdict, why, record) of the last night of ``nights`` (oldest first), after the
    restart rules have split them into seasons (``RESTART``)."""
    from harness.stats.sequential import (
        DEFAULT_SEASON,
        alarm_threshold,
        confirmation,
        detector,
    )

    season_len = policy.looks or DEFAULT_SEASON
    alpha = 1 - policy.confidence
    if policy.sides == "two-sided":
        alpha /= 2
    null = _null(policy)
    alarm_at = alarm_threshold(alpha, season_len)
    season = _current_season(nights, null, season_len, alarm_at)
    x = np.array([[n.estimate for n in season]])
    se = np.array([[n.se for n in season]])
    det = detector(x, se, null, "below")
    log_ship = float(confirmation(x, se, null, "above")[0, -1])
    crossed = np.flatnonzero(det.log_r[0] >= alarm_at)
    look = len(season)
    ship_name = {"threshold": "improvement", "non-inferiority": "non-inferior"}.get(
        policy.rule, "improvement"
    )
    what = {"threshold": f"the bar {null:g}", "non-inferiority": f"−margin {null:+g}"}.get(
        policy.rule, "0"
    )
    if crossed.size:
        first = int(crossed[0])
        start = int(det.start[0, first])
        verdict = "regression"
        why = (
            f"regression detected at night {first + 1} of this season (evidence from night "
            f"{start + 1} on, run {season[start].run_id}): R = {math.exp(det.log_r[0, first]):.4g} "
            f"≥ {season_len}/α = {math.exp(alarm_at):.4g}"
        )
    elif log_ship >= math.log(1 / alpha):
        verdict = ship_name
        why = (
            f"evidence over {look} night(s) that the effect is above {what}: "
            f"M = {math.exp(log_ship):.4g} ≥ 1/α = {1 / alpha:.4g}"
        )
    else:
        verdict = "inconclusive"
        why = (
            f"after {look} night(s): evidence for shipping M = {math.exp(log_ship):.3g} "
            f"(needs {1 / alpha:.4g}), for a regression R = {math.exp(det.log_r[0, -1]):.3g} "
            f"(needs {math.exp(alarm_at):.4g})"
        )
    record: Sequential = {
        "look": look,
        "season_looks": season_len,
        "nights": [n.run_id for n in season],
        "estimates": [n.estimate for n in season],
        "ses": [n.se for n in season],
        "regression_evidence": float(math.exp(min(det.log_r[0, -1], 700.0))),
        "regression_threshold": float(math.exp(alarm_at)),
        "ship_evidence": float(math.exp(min(log_ship, 700.0))),
        "ship_threshold": 1 / alpha,
        "alpha": alpha,
        "schedule": (
            f"evidence pooled over the season's nights: e-detector for a regression "
            f"(≤ α = {alpha:g} false alarms per {season_len} nights), test martingale for "
            f"shipping (≤ α false claims at any night)"
        ),
        "restart": RESTART,
    }
    return verdict, why, record


def _current_season(
    nights: list[Night], null: float, season_len: int, alarm_at: float
) -> list[Night]:
    """The nights of the last season: a new one starts after ``season_len`` nights and on the
    night after a regression alarm."""
    from harness.stats.sequential import detector

    start = 0
    while True:
        season = nights[start : start + season_len]
        if start + season_len < len(nights) and len(season) == season_len:
            end = start + season_len
        else:
            end = len(nights)
        season = nights[start:end]
        x = np.array([[n.estimate for n in season]])
        se = np.array([[n.se for n in season]])
        crossed = np.flatnonzero(detector(x, se, null, "below").log_r[0] >= alarm_at)
        if crossed.size and start + int(crossed[0]) + 1 < len(nights):
            start = start + int(crossed[0]) + 1
            continue
        if end < len(nights):
            start = end
            continue
        return season


def drift_reading(
    trials_now: Trials, trials_before: Trials, settings: Settings
) -> tuple[float, float] | None:
    """One arm's night read alone (``harness history --sequential``): (its mean per-task rate,
    the SE from the per-task change since its previous run, ``drift_se``). None when the two
    runs share no resolved task."""
    from harness.stats.sequential import drift_se

    now = _rates(trials_now, settings.denominator)
    before = _rates(trials_before, settings.denominator)
    common = sorted(set(now) & set(before))
    if not now or len(common) < 2:
        return None
    se = drift_se(np.array([[now[t] for t in common]]), np.array([[before[t] for t in common]]))
    return float(np.mean([now[t] for t in sorted(now)])), float(se[0])


def drift_call(season: list[Night], alpha: float = 0.05) -> tuple[bool, float, float]:
    """(regression flagged by this night, evidence R, alarm level) for an arm's season of
    nights: the e-detector on their recursive residuals (``innovations``)."""
    from harness.stats.sequential import (
        DEFAULT_SEASON,
        alarm_threshold,
        detector,
        innovations,
    )

    x = np.array([[n.estimate for n in season]])
    se = np.array([[n.se for n in season]])
    resid, resid_se = innovations(x, se)
    log_r = detector(resid, resid_se, 0.0, "below").log_r[0]
    alarm = alarm_threshold(alpha, DEFAULT_SEASON)
    return bool(np.any(log_r >= alarm)), float(math.exp(min(log_r[-1], 700.0))), math.exp(alarm)
