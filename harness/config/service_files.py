"""A task's ``grading.services`` checked against its environment when the suite is resolved:
files can be taken only from services the environment starts, at absolute paths, and not
in a multi-step task (its steps are graded while the services live on). A task graded in
place has no ``grading`` settings at all (``Task``'s own check)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.config.loader import field_path, nearest_line
from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.config.loader import LoadedTask
    from harness.config.models import Environment


def _why(loaded: LoadedTask, env: Environment, name: str) -> str | None:
    task = loaded.task
    if name not in env.spec.services:
        have = ", ".join(sorted(env.spec.services)) or "none"
        return f"environment '{env.name}' has no service '{name}' (its services: {have})"
    if task.steps:
        return "a multi-step task's steps cannot take files from services"
    relative = [p for p in task.grading.services[name].paths if not p.startswith("/")]
    return f"paths in a service must be absolute ({relative[0]})" if relative else None


def check_service_files(loaded: LoadedTask, env: Environment) -> None:
    """Raise ``ConfigError`` naming the task's file, field and line for the first service
    whose files cannot be taken."""
    found = [
        (
            (*loaded.prefix, "steps", i, "grading", "services"),
            "a step cannot take files from services",
        )
        for i, step in enumerate(loaded.task.steps)
        if step.grading is not None and step.grading.services
    ]
    for name in loaded.task.grading.services:
        if (why := _why(loaded, env, name)) is not None:
            found.append(((*loaded.prefix, "grading", "services", name), why))
    if found:
        loc, why = found[0]
        raise ConfigError(
            str(loaded.file),
            field_path(loc),
            f"task '{loaded.task.id}': {why}",
            nearest_line(loaded.lines, loc) or loaded.line,
        )


__all__ = ["check_service_files"]
