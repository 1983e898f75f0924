"""Adaptive repeats: spend further trials only where the arms disagree (eval-harness guide).

Phase 1 runs every task ``first_k`` times per arm. Tasks every arm passes (or every arm
fails) on every trial tell nothing new on the next attempt; tasks where the arms disagree
(discordant) or where an arm both passed and failed (unstable) are topped up to ``max_k``
trials, the same number for every arm, within a trial budget. Cost is about
n + k·(b + c) trials per arm instead of k·n.

Selection reads the *arms' disagreement*, never one arm's failure: a task every arm fails
is never repeated, so no configuration can retry only failures (eval-harness guide: that only ever
inflates, and only on the unstable tasks).
"""

from __future__ import annotations

import random

import numpy as np

from harness.analysis.table import Trials
from harness.release.records import DesignSummary
from harness.release.run_config import StoredRepeats
from harness.seeds import derive_seed


def _order_key(seed: int, task_id: str) -> float:
    return random.Random(derive_seed("repeat-order", seed, task_id)).random()


def select_repeats(
    trials: Trials,
    arms: list[str],
    *,
    first_k: int,
    max_k: int,
    budget_trials: int | None,
    seed: int = 0,
    trials_per_index: int | None = None,
) -> list[tuple[str, int, str]]:
    """Tasks to repeat: ``[(task_id, extra trials per arm, reason)]`` in priority order.

    Args:
        trials: the run's trials; those with ``trial_index >= first_k`` (and variant
            trials) are ignored, so the choice is reproducible on resume.
        arms: every arm of the run; all get the same extra trials on a chosen task.
        first_k, max_k: trials per task per arm in phase 1, and on repeated tasks.
        budget_trials: most trials the repeat phase may add over all arms (None: no limit).
        seed: orders tasks within a priority class (discordant before unstable) when the
            budget cannot cover them all; never by which arm failed.
        trials_per_index: trials one extra index costs over all arms (default len(arms);
            more with variants).
    """
    phase_one = trials.originals().first(first_k)
    names = phase_one.task.names
    counts, passes = [], []
    for arm in arms:
        t = phase_one.of_arm(arm)
        counts.append(np.bincount(t.task.codes, minlength=len(names)))
        passes.append(np.bincount(t.task.codes, weights=t.passed, minlength=len(names)))
    chosen: list[tuple[int, float, str, str]] = []
    for code in np.unique(phase_one.task.codes).tolist():
        task_id = str(names[code])
        if any(n[code] < first_k for n in counts):
            continue  # incomplete (interrupted): no reading of this task yet
        rates = [float(c[code] / n[code]) for c, n in zip(passes, counts, strict=True)]
        if len(set(rates)) > 1:
            chosen.append((0, _order_key(seed, task_id), task_id, "discordant"))
        elif any(0 < r < 1 for r in rates):
            chosen.append((1, _order_key(seed, task_id), task_id, "unstable"))
    chosen.sort()
    per_index = trials_per_index or len(arms)
    left = budget_trials if budget_trials is not None else None
    out: list[tuple[str, int, str]] = []
    for _, _, task_id, reason in chosen:
        extra = max_k - first_k
        if left is not None:
            extra = min(extra, left // per_index)
            if extra <= 0:
                break
            left -= extra * per_index
        out.append((task_id, extra, reason))
    return out


def design_summary(
    repeats: StoredRepeats | None,
    trials_per_task: int,
    counts: dict[str, list[int]],
) -> DesignSummary:
    """Name the trial design and its spend from the suite's ``repeats`` settings and the
    trials each task received per arm (``counts[arm]`` = trials per task).

    Returns {"design", "trials", "full_repeats_trials", "repeated_tasks", "saved_share"}.
    """
    repeats = repeats or {}
    spent = sum(sum(c) for c in counts.values())
    n_tasks = max((len(c) for c in counts.values()), default=0)
    n_arms = len(counts)
    if repeats.get("mode") != "adaptive":
        k = trials_per_task
        return {
            "design": f"fixed: {k} trial{'s' if k != 1 else ''} per task per arm",
            "trials": spent,
            "full_repeats_trials": spent,
            "repeated_tasks": 0,
            "saved_share": 0.0,
        }
    max_k = int(repeats.get("max_k", 5))
    full = max_k * n_tasks * n_arms
    repeated = max((sum(1 for x in c if x > trials_per_task) for c in counts.values()), default=0)
    budget = repeats.get("budget_trials")
    return {
        "design": (
            f"adaptive repeats: {trials_per_task} per task per arm, then up to {max_k} on "
            f"discordant or unstable tasks ({repeated} of {n_tasks} tasks"
            + (f", budget {budget} trials" if budget is not None else "")
            + ")"
        ),
        "trials": spent,
        "full_repeats_trials": full,
        "repeated_tasks": repeated,
        "saved_share": (1 - spent / full) if full else 0.0,
    }
