"""Which verdicts were reached with less isolation than the default, for the report to say.

Two settings weaken what a verdict rests on, and both are declared, never silent: a task
with ``grade_in_place`` is graded in the agent's own live sandbox instead of a fresh grading
sandbox (the agent could have changed what its graders run), and an environment with
``user: root`` runs the agent as root on Docker (system directories are then writable). The
run's stored config names both; this module counts the trials they touched, per arm.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from harness.analysis.table import Trials
from harness.report.records import Provenance, TaskProvenance

ROOT_USERS = ("root", "0", "0:0")
ROOT_BACKENDS = ("docker",)
"""Backends on which an environment's ``user`` decides the agent's uid (bwrap always maps the
agent to an unprivileged uid; unsafe-local runs it as the harness's own user)."""


def provenance(config: Mapping[str, object], sandbox: str | None, trials: Trials) -> Provenance:
    """The tasks graded in place and the tasks whose agent ran as root, with their trials."""
    tasks = config.get("tasks")
    environments = config.get("environments")
    tasks = tasks if isinstance(tasks, dict) else {}
    environments = environments if isinstance(environments, dict) else {}
    counts = Counter(zip(trials.task.values().tolist(), trials.arm.values().tolist(), strict=True))
    per_task: dict[str, dict[str, int]] = {}
    for (task, arm), n in sorted(counts.items()):
        per_task.setdefault(task, {})[arm] = n

    def entry(task: str, why: str) -> TaskProvenance:
        return {"task": task, "why": why, "trials": per_task.get(task, {})}

    in_place, root = [], []
    for task_id, task in sorted(tasks.items()):
        if not isinstance(task, dict) or task_id not in per_task:
            continue
        if why := _in_place(task):
            in_place.append(entry(task_id, why))
        env = environments.get(task.get("environment"))
        if sandbox in ROOT_BACKENDS and isinstance(env, dict) and env.get("user") in ROOT_USERS:
            root.append(entry(task_id, f"environment '{task.get('environment')}' sets user: root"))
    return {"graded_in_place": in_place, "agent_root": root}


def _in_place(task: dict) -> str | None:
    """Why the task (or one of its steps) is graded in the agent's sandbox, or None; a step
    with a grading sandbox of its own is not."""
    steps = [s for s in task.get("steps") or [] if isinstance(s, dict)]
    if not steps:
        return str(task["grade_in_place"]) if task.get("grade_in_place") else None
    for step in steps:
        if step.get("grade_in_place"):
            return f"step {step.get('name')}: {step['grade_in_place']}"
        if task.get("grade_in_place") and not step.get("grading"):
            return str(task["grade_in_place"])
    return None


def provenance_warnings(found: Provenance) -> list[str]:
    """One line per weakened kind of verdict, naming the tasks (the report's warnings)."""
    out = []
    for entries, what in (
        (found["graded_in_place"], "graded in the agent's own sandbox, not a fresh one"),
        (found["agent_root"], "ran their agent as root (the environment sets user: root)"),
    ):
        if entries:
            n = sum(sum(e["trials"].values()) for e in entries)
            names = ", ".join(e["task"] for e in entries[:5])
            more = f" and {len(entries) - 5} more" if len(entries) > 5 else ""
            out.append(f"{n} trial(s) of {len(entries)} task(s) {what}: {names}{more}")
    return out
