"""The plan: which trials run, with which seeds, in which order.

Seeds depend only on (suite seed, task id, trial index): adding tasks or trials never
changes an existing trial's seed, and every arm's trial i of a task shares it (a matched
block). The order interleaves arms so that drift in a provider lands on every arm alike:
trial-index blocks, tasks shuffled within a block, arms shuffled within a task.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.config.loader import ResolvedSuite
from harness.seeds import derive_seed, trial_seed

if TYPE_CHECKING:
    from harness.analysis.table import Trials


@dataclass(frozen=True)
class Job:
    arm: str
    task_id: str
    trial_index: int
    seed: int
    variant: str = ""
    """'' for the task as written, else the id of a meaning-preserving variant."""

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.arm, self.task_id, self.trial_index, self.variant)


def build_plan(resolved: ResolvedSuite, arms: list[str] | None = None) -> list[Job]:
    """Every (arm, task, trial[, variant]) job, in interleaved execution order.

    The arms include the A/A copy of the baseline when the suite sets ``aa: true`` (the
    suite model adds it as an ordinary arm, so it is interleaved like any other). With
    adaptive repeats this is phase 1; ``repeat_jobs`` plans phase 2 from its results.
    """
    suite = resolved.suite
    arm_names = arms or [a.name for a in suite.arms]
    task_ids = sorted(t.task.id for t in resolved.tasks)
    jobs: list[Job] = []
    for i in range(suite.trials):
        jobs.extend(_block(resolved, arm_names, task_ids, i))
    return jobs


def _block(resolved: ResolvedSuite, arm_names: list[str], task_ids: list[str], i: int) -> list[Job]:
    """Trial index i of the given tasks: tasks shuffled, arms shuffled within a task."""
    suite = resolved.suite
    jobs: list[Job] = []
    order = sorted(task_ids)
    random.Random(derive_seed("order", suite.seed, i)).shuffle(order)
    for task_id in order:
        seed = trial_seed(suite.seed, task_id, i)
        arms_here = list(arm_names)
        random.Random(derive_seed("arms", suite.seed, task_id, i)).shuffle(arms_here)
        variants = [""]
        if suite.variants:
            variants += [v.id for v in resolved.task(task_id).task.variants]
        for arm in arms_here:
            jobs.extend(Job(arm, task_id, i, seed, v) for v in variants)
    return jobs


def repeat_jobs(resolved: ResolvedSuite, trials: Trials) -> list[Job]:
    """Phase 2 of adaptive repeats: extra trial indices for discordant or unstable tasks.

    ``trials`` are the run's trials (``harness.analysis.load_run_table``). Every arm gets the
    same extra indices of a chosen task, with the shared trial seeds (matched blocks),
    interleaved as in phase 1. Only phase-1 trials are read, so the choice is the same when
    a run is resumed.
    """
    from harness.release.adaptive import select_repeats

    suite = resolved.suite
    if suite.repeats.mode != "adaptive":
        return []
    arm_names = [a.name for a in suite.arms]
    per_index = len(arm_names)
    if suite.variants:  # the costliest task bounds the spend per extra index
        per_index *= 1 + max((len(t.task.variants) for t in resolved.tasks), default=0)
    chosen = select_repeats(
        trials,
        arm_names,
        first_k=suite.trials,
        max_k=suite.repeats.max_k,
        budget_trials=suite.repeats.budget_trials,
        seed=suite.seed,
        trials_per_index=per_index,
    )
    extra = {task_id: n for task_id, n, _ in chosen}
    jobs: list[Job] = []
    for i in range(suite.trials, suite.repeats.max_k):
        tasks_here = [t for t, n in extra.items() if i < suite.trials + n]
        if tasks_here:
            jobs.extend(_block(resolved, arm_names, tasks_here, i))
    return jobs
