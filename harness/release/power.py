"""Power planning: the tasks a gate needs, and the smallest effect a suite's gate can detect.

Every number here is the power of the gate that will judge the run, measured by simulating
its decision (``harness.stats.plan_sim``; the rule read by ``harness.stats.GateRule``), not a
z-test formula: at the cluster MDE the formula printed, the gate's power was 36–68%. Each
plan names the rule and test it assumed and the model it simulated. The normal-approximation
sizes (metrics guide, eval-harness guide: from 85%, an unpaired comparison needs
~4,700 / 680 / 140 cases per arm for +2 / +5 / +10 points) are kept only as the starting
point of the search and for the unpaired design no gate reads.
"""

from __future__ import annotations

import math

import numpy as np

from harness.analysis.table import Trials
from harness.release.records import Sensitivity, TasksNeeded, ThresholdPlan

SEED = 20_261_201
"""Seed of every plan's simulated runs (a plan is reproducible)."""
PLAN_RUNS = 1000
"""Simulated runs per power evaluation of an a-priori plan (± about 1.3 points at 80%)."""
INDEPENDENT = (
    "n independent single-trial tasks; the arms split a share D of them (the discordance), "
    "candidate − baseline = lift"
)


def _rule(policy, alpha: float):
    """The gate's rule (``policy``, else the default improvement rule) at level 1 − α."""
    from harness.stats import GateRule

    if policy is None:
        return GateRule("improvement", confidence=1 - alpha)
    if policy.rule == "threshold":
        raise ValueError("the policy's rule is threshold: plan it with --bar and --rate")
    return GateRule.of(policy)


def tasks_needed(
    base: float,
    lift: float,
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    policy=None,
) -> TasksNeeded:
    """Paired tasks for the gate (``policy``'s rule, default improvement one-sided at α) to
    pass a candidate ``lift`` above ``base`` with ``power``, by simulation.

    Without ``discordance`` (the share of tasks the arms disagree on, best measured in a
    pilot run) the answer is given for a few plausible values.
    """
    from harness.stats import cases_needed, cases_needed_paired, independent_tasks_power
    from harness.stats.plan_sim import smallest_n

    rule = _rule(policy, alpha)
    # the unpaired design for contrast: two-sided formula (no gate reads unpaired runs)
    unpaired = cases_needed(base, lift, alpha, power)
    ds = [discordance] if discordance is not None else _plausible(lift)
    paired: list[dict[str, float | int | None]] = []
    for d in ds:
        if abs(lift) >= d:
            continue
        # one-sided formula at the rule's α: a start for the search
        start = cases_needed_paired(lift, d, 2 * rule.alpha, power)

        def power_at(n: int, d: float = d) -> float:
            return independent_tasks_power(n, base, lift, d, rule, PLAN_RUNS, SEED + n)

        tasks, achieved = smallest_n(power_at, start, power)
        row: dict[str, float | int | None] = {
            "discordance": d,
            "tasks": tasks,
            "simulated_power": achieved,
            "win_rate": (d + abs(lift)) / (2 * d),
            "discordant_tasks": round(d * tasks) if tasks else None,
        }
        paired.append(row)
    return {
        "base": base,
        "lift": lift,
        "alpha": rule.alpha,
        "power": power,
        "unpaired_per_arm": unpaired,
        "paired": paired,
        "discordance_assumed": discordance is None,
        "rule": rule.describe(),
        "model": INDEPENDENT,
        "simulated_runs": PLAN_RUNS,
    }


def _plausible(lift: float) -> list[float]:
    return sorted({round(min(1.0, abs(lift) * m), 4) for m in (1.5, 2, 3, 4)})


def run_sensitivity(
    trials_a: Trials,
    trials_b: Trials,
    alpha: float = 0.05,
    power: float = 0.8,
    denominator: str = "failure",
    *,
    policy=None,
    cluster_key: str = "cluster",
    heterogeneity: float = 0.5,
) -> Sensitivity:
    """The smallest lift the gate would pass with ``power`` on the next run of this suite.

    Simulated (``PilotModel``): the run's tasks, clusters, weights and trial counts, each
    task's rate from its empirical-Bayes posterior (both arms pooled), the candidate shifted
    by λ + N(0, ``heterogeneity``²) per cluster on the logit scale, each simulated run read
    by the gate's rule (``policy``, default improvement one-sided at α).
    """
    from harness.stats import PilotModel, mean_estimate, simulated_mde

    counts_a, clusters = _counts(trials_a, denominator)
    counts_b, _ = _counts(trials_b, denominator)
    tasks = sorted(set(counts_a) & set(counts_b))
    n = len(tasks)
    if n == 0:
        return {"n_tasks": 0}
    ca = np.array([counts_a[t][0] for t in tasks])
    na = np.array([counts_a[t][1] for t in tasks])
    cb = np.array([counts_b[t][0] for t in tasks])
    nb = np.array([counts_b[t][1] for t in tasks])
    labels = tasks if cluster_key == "task" else [clusters[t] for t in tasks]
    _, codes = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    d = cb / nb - ca / na
    base = mean_estimate(ca / na, labels, kind="rate")
    rule = _rule(policy, alpha)
    model = PilotModel.from_counts(codes, ca, na, cb, nb, heterogeneity=heterogeneity)
    found = simulated_mde(model, rule, power, rng=SEED)
    return {
        "n_tasks": n,
        "n_clusters": int(codes.max()) + 1,
        "baseline_rate": base.estimate,
        "baseline_interval": [base.lo, base.hi],
        "baseline_method": base.method,
        "discordance": float(np.mean(d * d)),
        "discordant_tasks": int(np.count_nonzero(d)),
        "alpha": rule.alpha,
        "power": power,
        "mde": found.effect,
        "simulated_power": found.power,
        "simulated_runs": found.runs,
        "heterogeneity": heterogeneity,
        "rule": rule.describe(),
        "model": (
            "the next run of this suite: its tasks, clusters and trials; each task's rate drawn "
            "from its empirical-Bayes posterior (both arms pooled), the candidate shifted on the "
            f"logit scale by a constant plus N(0, {heterogeneity:g}²) per cluster"
        ),
    }


def _counts(trials: Trials, denominator: str) -> tuple[dict, dict]:
    """(task → (passes, counted trials), task → cluster) over the task-as-written trials."""
    from harness.release.compare import task_counts

    ids, passes, counted, clusters = task_counts(trials, denominator)
    return (
        {t: (p, n) for t, p, n in zip(ids, passes, counted, strict=True)},
        dict(zip(ids, clusters, strict=True)),
    )


def cluster_discordance(diffs: list[float], clusters: list[str]) -> float:
    """The paired formula's second moment D on clusters: mean over clusters of (T_c / m̄)²,
    T_c the sum of a cluster's per-task differences and m̄ = n/C the mean cluster size (the
    paired SD(d)² = D − δ² of the metrics guide, with clusters in place of tasks)."""
    totals: dict[str, float] = {}
    for d, c in zip(diffs, clusters, strict=True):
        totals[c] = totals.get(c, 0.0) + d
    m_bar = len(diffs) / len(totals)
    return sum((t / m_bar) ** 2 for t in totals.values()) / len(totals)


def tasks_for_threshold(
    rate: float,
    bar: float,
    alpha: float = 0.05,
    power: float = 0.8,
    design_effect: float = 1.0,
    policy=None,
) -> ThresholdPlan:
    """Independent single-trial tasks for the threshold rule to find a true ``rate`` above
    ``bar`` (one-sided at α) with ``power``, by simulating the rule; the score-test size

        n = ((z_{1−α} sqrt(b(1 − b)) + z_power sqrt(p(1 − p))) / (p − b))²

    starts the search. With clustered tasks the simulated n is multiplied by the design
    effect 1 + (m − 1)ρ (metrics guide), an approximation the plan states.
    """
    from harness.stats import GateRule, threshold_tasks_power
    from harness.stats._util import z_quantile
    from harness.stats.plan_sim import smallest_n

    if not 0 < bar < 1 or not 0 < rate <= 1:
        raise ValueError("need 0 < bar < 1 and 0 < rate <= 1")
    if rate <= bar:
        raise ValueError(f"the assumed rate {rate:g} must exceed the bar {bar:g}")
    if policy is not None and policy.rule == "threshold":
        rule = GateRule.of(policy)._replace_bar(bar)
    else:
        rule = GateRule("threshold", confidence=1 - alpha, bar=bar)
    za, zb = z_quantile(1 - alpha), z_quantile(power)
    start = (
        (za * math.sqrt(bar * (1 - bar)) + zb * math.sqrt(rate * (1 - rate))) / (rate - bar)
    ) ** 2

    def power_at(n: int) -> float:
        return threshold_tasks_power(n, rate, rule, PLAN_RUNS, SEED + n)

    tasks, achieved = smallest_n(power_at, max(4, math.ceil(start)), power)
    return {
        "rate": rate,
        "bar": bar,
        "alpha": rule.alpha,
        "power": power,
        "sides": rule.sides,
        "design_effect": design_effect,
        "tasks": None if tasks is None else math.ceil(tasks * design_effect - 1e-9),
        "independent_tasks": tasks,
        "simulated_power": achieved,
        "simulated_runs": PLAN_RUNS,
        "rule": rule.describe(),
        "model": "n independent single-trial tasks at the assumed rate"
        + ("" if design_effect == 1 else f", then × design effect {design_effect:g}"),
    }
