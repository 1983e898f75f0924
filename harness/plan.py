"""The plan: which trials run, with which seeds, in which order.

Seeds depend only on (suite seed, task id, trial index): adding tasks or trials never
changes an existing trial's seed, and every arm's trial i of a task shares it (a matched
block). The order interleaves arms so that drift in a provider lands on every arm alike:
trial-index blocks, tasks shuffled within a block, arms shuffled within a task.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from harness.config.loader import ResolvedSuite


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from a stable hash of the parts (never Python's salted ``hash``)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def trial_seed(suite_seed: int, task_id: str, trial_index: int) -> int:
    return derive_seed("trial", suite_seed, task_id, trial_index)


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
    """Every (arm, task, trial[, variant]) job, in interleaved execution order."""
    suite = resolved.suite
    arm_names = arms or [a.name for a in suite.arms]
    task_ids = sorted(t.task.id for t in resolved.tasks)
    jobs: list[Job] = []
    for i in range(suite.trials):
        order = list(task_ids)
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
