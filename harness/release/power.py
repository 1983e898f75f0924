"""Power planning: how many tasks a comparison needs, and what a finished run could detect.

Eval-harness guide: from 85%, an unpaired comparison needs ~4,700 / 680 / 140 cases per arm for +2 /
+5 / +10 points; a paired one needs far fewer, because only discordant tasks carry
information (its real sample size is b + c). Metrics guide: SD(d)² = D − δ² for 0/1 outcomes.
"""

from __future__ import annotations

import math

from harness.analysis.table import Trials
from harness.release.records import Sensitivity, TasksNeeded, ThresholdPlan


def tasks_needed(
    base: float,
    lift: float,
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> TasksNeeded:
    """Tasks for an unpaired and a paired comparison to detect ``base`` → ``base + lift``.

    Without ``discordance`` (the share of tasks the arms disagree on, best measured in a
    pilot run) the paired answer is given for a few plausible values. Two-sided α.
    """
    from harness.stats import cases_needed, cases_needed_paired, discordant_pairs_needed

    unpaired = cases_needed(base, lift, alpha, power)
    if discordance is not None:
        ds = [discordance]
    else:
        ds = sorted({round(min(1.0, abs(lift) * m), 4) for m in (1.5, 2, 3, 4)})
    paired: list[dict[str, float | int | None]] = []
    for d in ds:
        if abs(lift) >= d:
            continue
        win = (d + abs(lift)) / (2 * d)
        tasks = cases_needed_paired(lift, d, alpha, power)
        row: dict[str, float | int | None] = {"discordance": d, "tasks": tasks, "win_rate": win}
        # The discordant tasks those tasks are expected to hold, D·n (eval-harness guide: the paired
        # test's real sample size is b + c).
        row["discordant_tasks"] = round(d * tasks)
        exact = discordant_pairs_needed(win, alpha, power) if win < 1 else None
        row["exact_discordant_needed"] = exact
        row["tasks_for_exact_test"] = math.ceil(exact / d) if exact else None
        paired.append(row)
    return {
        "base": base,
        "lift": lift,
        "alpha": alpha,
        "power": power,
        "unpaired_per_arm": unpaired,
        "paired": paired,
        "discordance_assumed": discordance is None,
    }


def run_sensitivity(
    trials_a: Trials,
    trials_b: Trials,
    alpha: float = 0.05,
    power: float = 0.8,
    denominator: str = "failure",
) -> Sensitivity:
    """The smallest lift this run could have detected, from its tasks and measured discordance.

    Discordance is measured as mean(d²) over paired tasks, d = per-task rate difference
    (for one trial per task, the share of discordant tasks; with repeats, the same second
    moment the paired formula uses). Also given on clusters when tasks share clusters.
    """
    from harness.release.compare import task_rates
    from harness.stats import minimum_detectable_effect, minimum_detectable_effect_paired

    ids_a, rates_a, clusters_a = task_rates(trials_a, denominator)
    ids_b, rates_b, _ = task_rates(trials_b, denominator)
    ra, ca = dict(zip(ids_a, rates_a, strict=True)), dict(zip(ids_a, clusters_a, strict=True))
    rb = dict(zip(ids_b, rates_b, strict=True))
    tasks = sorted(set(ra) & set(rb))
    n = len(tasks)
    if n == 0:
        return {"n_tasks": 0}
    d = [rb[t] - ra[t] for t in tasks]
    disc = sum(x * x for x in d) / n
    base = sum(ra[t] for t in tasks) / n
    n_clusters = len({ca[t] for t in tasks})
    from harness.stats import mean_estimate

    b_int = mean_estimate([ra[t] for t in tasks], [ca[t] for t in tasks], kind="rate")
    out: Sensitivity = {
        "n_tasks": n,
        "n_clusters": n_clusters,
        "baseline_rate": base,
        "baseline_interval": [b_int.lo, b_int.hi],
        "baseline_method": b_int.method,
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
        d_cl = cluster_discordance(d, [ca[t] for t in tasks])
        out["cluster_discordance"] = d_cl
        out["mde_paired_clusters"] = minimum_detectable_effect_paired(
            n_clusters, min(d_cl, 1.0), alpha, power
        )
    return out


def cluster_discordance(diffs: list[float], clusters: list[str]) -> float:
    """The paired formula's second moment D on clusters: mean over clusters of (T_c / m̄)²,
    T_c the sum of a cluster's per-task differences and m̄ = n/C the mean cluster size.

    The task mean of differences is the mean of T_c/m̄ over clusters, so with C clusters as
    the independent unit Var = (D − δ²)/C and the detectable effect is z·sqrt(D/(C + z²)),
    the task-level formula with clusters in place of tasks (the paired SD(d)² = D − δ² of the metrics guide).
    """
    totals: dict[str, float] = {}
    for d, c in zip(diffs, clusters, strict=True):
        totals[c] = totals.get(c, 0.0) + d
    m_bar = len(diffs) / len(totals)
    return sum((t / m_bar) ** 2 for t in totals.values()) / len(totals)


def tasks_for_threshold(
    rate: float, bar: float, alpha: float = 0.05, power: float = 0.8, design_effect: float = 1.0
) -> ThresholdPlan:
    """Tasks needed to show p > ``bar`` (one-sided at α) with ``power`` when the true rate is
    ``rate``: the score test Wilson's lower bound inverts,

        n = ((z_{1−α} sqrt(b(1 − b)) + z_power sqrt(p(1 − p))) / (p − b))²

    times the design effect of clustering (1 + (m − 1)ρ, metrics guide) when tasks share clusters.
    """
    from harness.stats._util import z_quantile

    if not 0 < bar < 1 or not 0 < rate <= 1:
        raise ValueError("need 0 < bar < 1 and 0 < rate <= 1")
    if rate <= bar:
        raise ValueError(f"the assumed rate {rate:g} must exceed the bar {bar:g}")
    za, zb = z_quantile(1 - alpha), z_quantile(power)
    n = ((za * math.sqrt(bar * (1 - bar)) + zb * math.sqrt(rate * (1 - rate))) / (rate - bar)) ** 2
    return {
        "rate": rate,
        "bar": bar,
        "alpha": alpha,
        "power": power,
        "sides": "one-sided",
        "design_effect": design_effect,
        "tasks": math.ceil(n * design_effect - 1e-9),
    }


def _nan_none(x: float) -> float | None:
    return None if math.isnan(x) else x
