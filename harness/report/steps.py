"""Per-step progress of a run's multi-step tasks (the report's ``steps`` section).

For each arm, task and step: of the task's trials, how many reached the step (it ran),
how many passed it, with a Wilson interval over those trials (trials of one task are
independent draws of that task: the interval is the task's own per-trial rate, not a rate
over tasks), and the mean reward (a step not reached counts 0, as in the trial's score).
Read from each trial's ``evidence.steps`` (``harness.trial_multistep``); only runs whose
stored tasks declare steps are read.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.load import load_trial_rows
from harness.report.records import StepProgress
from harness.stats.intervals import wilson_interval
from harness.store import Store
from harness.store.tables import Run


def has_steps(config: dict[str, Any]) -> bool:
    """Do the run's stored tasks declare steps?"""
    tasks = config.get("tasks") or {}
    items = tasks.values() if isinstance(tasks, dict) else tasks
    return any(isinstance(t, dict) and t.get("steps") for t in items)


def step_progress(
    rows: list[tuple[str, str, list[dict[str, Any]]]], confidence: float
) -> list[StepProgress]:
    """Rows (arm, task, the trial's steps) in; one record per arm, task and step out."""
    grouped: dict[tuple[str, str], list[list[dict[str, Any]]]] = {}
    for arm, task, steps in rows:
        grouped.setdefault((arm, task), []).append(steps)
    out: list[StepProgress] = []
    for (arm, task), trials in sorted(grouped.items()):
        names = [s["name"] for s in max(trials, key=len)]
        for i, name in enumerate(names):
            got = [t[i] for t in trials if i < len(t)]
            reached = sum(1 for s in got if s.get("reward") is not None)
            passed = sum(1 for s in got if s.get("passed"))
            n = len(trials)
            lo, hi = wilson_interval(passed, n, confidence)
            rewards = [float(s.get("reward") or 0.0) for s in got]
            out.append(
                StepProgress(
                    arm=arm,
                    task=task,
                    step=name,
                    index=i + 1,
                    trials=n,
                    reached=reached,
                    passed=passed,
                    rate=passed / n,
                    lo=float(lo),
                    hi=float(hi),
                    confidence=confidence,
                    mean_reward=sum(rewards) / n,
                )  # fmt: skip
            )
    return out


def steps_section(store: Store, run: Run, config: dict[str, Any]) -> list[StepProgress] | None:
    """The section for a run with multi-step tasks; None for any other run."""
    if not has_steps(config):
        return None
    confidence = float((config.get("suite") or {}).get("report", {}).get("confidence", 0.95))
    rows: list[tuple[str, str, list[dict[str, Any]]]] = []
    for trial in load_trial_rows(store, run.id):
        steps = (trial.evidence or {}).get("steps")
        if isinstance(steps, list) and steps:
            rows.append((trial.arm, trial.task_id, steps))
    return step_progress(rows, confidence)


__all__ = ["StepProgress", "has_steps", "step_progress", "steps_section"]
