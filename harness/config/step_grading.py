"""How each step of a multi-step task is graded, as a task of its own.

A step is graded as its task is (in place with ``grade_in_place``, else in a fresh grading
sandbox made by the task's ``grading``) unless it says otherwise: its own ``grading`` (a
sandbox of its own: Harbor's per-step separate verifier) or its own ``grade_in_place``
(Harbor's per-step shared verifier in a task whose verifier is separate; with a
``grading`` that gives only the network while graded). Every check and
every trial reads a step's grading through ``step_task``, so no caller learns the rule."""

from __future__ import annotations

from harness.config.models import Grading, Task

Loc = tuple[str | int, ...]


def step_task(task: Task, index: int) -> Task:
    """The task as step ``index`` is graded: the step's grading settings over the task's."""
    step = task.steps[index]
    if step.grade_in_place is not None:  # its grading: at most its network (in place)
        grading = step.grading or Grading()
        return task.model_copy(update={"grade_in_place": step.grade_in_place, "grading": grading})
    if step.grading is not None:
        return task.model_copy(update={"grade_in_place": None, "grading": step.grading})
    return task


def graded_views(task: Task) -> list[tuple[Loc, Task]]:
    """(where the settings are, relative to the task; the task as graded there): the task
    itself, then each step that grades differently."""
    views: list[tuple[Loc, Task]] = [((), task)]
    for i, step in enumerate(task.steps):
        if step.grading is not None or step.grade_in_place is not None:
            views.append((("steps", i), step_task(task, i)))
    return views


def graded_in_place(task: Task) -> bool:
    """Is any part of the task graded in the agent's sandbox (so that sandbox must let a
    grader in: ``SandboxRequest.in_place``)?"""
    if not task.steps:
        return task.grade_in_place is not None
    return any(step_task(task, i).grade_in_place is not None for i in range(len(task.steps)))


__all__ = ["Loc", "graded_in_place", "graded_views", "step_task"]
