"""Power planning: how many tasks a comparison needs, and what a finished run could detect.

Seed 001: from 85%, an unpaired comparison needs ~4,700 / 680 / 140 cases per arm for +2 /
+5 / +10 points; a paired one needs far fewer, because only discordant tasks carry
information (its real sample size is b + c). Seed 000: SD(d)² = D − δ² for 0/1 outcomes.
"""

from __future__ import annotations

import math
from typing import Any


def tasks_needed(
    base: float,
    lift: float,
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> dict[str, Any]:
    """Tasks for an unpaired and a paired comparison to detect ``base`` → ``base + lift``.

    Without ``discordance`` (the share of tasks the arms disagree on, best measured in a
    pilot run) the paired answer is given for a few plausible values. Two-sided α.
    """
    from harness.stats import cases_needed, cases_needed_paired, discordant_pairs_needed

    out: dict[str, Any] = {
        "base": base,
        "lift": lift,
        "alpha": alpha,
        "power": power,
        "unpaired_per_arm": cases_needed(base, lift, alpha, power),
    }
    if discordance is not None:
        ds = [discordance]
    else:
        ds = sorted({round(min(1.0, abs(lift) * m), 4) for m in (1.5, 2, 3, 4)})
    paired = []
    for d in ds:
        if abs(lift) >= d:
            continue
        win = (d + abs(lift)) / (2 * d)
        row = {"discordance": d, "tasks": cases_needed_paired(lift, d, alpha, power)}
        row["win_rate"] = win
        row["discordant_tasks"] = discordant_pairs_needed(win, alpha, power) if win < 1 else None
        paired.append(row)
    out["paired"] = paired
    out["discordance_assumed"] = discordance is None
    return out


def run_sensitivity(
    rows_a: list[dict],
    rows_b: list[dict],
    alpha: float = 0.05,
    power: float = 0.8,
    denominator: str = "failure",
) -> dict[str, Any]:
    """The smallest lift this run could have detected, from its tasks and measured discordance.

    Discordance is measured as mean(d²) over paired tasks, d = per-task rate difference
    (for one trial per task, the share of discordant tasks; with repeats, the same second
    moment the paired formula uses). Also given on clusters when tasks share clusters.
    """
    from harness.release.compare import task_rates
    from harness.stats import minimum_detectable_effect, minimum_detectable_effect_paired

    ra, ca = task_rates(rows_a, denominator)
    rb, _ = task_rates(rows_b, denominator)
    tasks = sorted(set(ra) & set(rb))
    n = len(tasks)
    if n == 0:
        return {"n_tasks": 0}
    d = [rb[t] - ra[t] for t in tasks]
    disc = sum(x * x for x in d) / n
    base = sum(ra[t] for t in tasks) / n
    n_clusters = len({ca[t] for t in tasks})
    out: dict[str, Any] = {
        "n_tasks": n,
        "n_clusters": n_clusters,
        "baseline_rate": base,
        "discordance": disc,
        "discordant_tasks": sum(1 for x in d if x != 0),
        "alpha": alpha,
        "power": power,
        "mde_unpaired": _nan_none(minimum_detectable_effect(n, min(base, 1 - 1e-9), alpha, power)),
        "mde_paired": _nan_none(minimum_detectable_effect_paired(n, min(disc, 1.0), alpha, power))
        if disc > 0
        else None,
    }
    if n_clusters < n and disc > 0:
        out["mde_paired_clusters"] = minimum_detectable_effect_paired(
            n_clusters, min(disc, 1.0), alpha, power
        )
    return out


def _nan_none(x: float) -> float | None:
    return None if math.isnan(x) else x
