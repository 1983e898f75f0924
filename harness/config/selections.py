"""Selections: ``--task``, ``--limit`` and ``--arm`` pick from a suite; they are not suite
settings (recorded on the run, so ``--resume`` selects alike)."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Protocol, TypeVar

from harness.config.models import Suite, Task
from harness.errors import ConfigError


class _Loaded(Protocol):
    @property
    def task(self) -> Task: ...


T = TypeVar("T", bound=_Loaded)


def select_tasks(
    tasks: list[T], patterns: list[str] | None, limit: int | None, path: Path
) -> list[T]:
    """Tasks whose id matches any glob pattern (``--task``), then the first ``limit``."""
    if patterns:
        chosen = [t for t in tasks if any(fnmatch.fnmatchcase(t.task.id, p) for p in patterns)]
        if not chosen:
            raise ConfigError(
                str(path), "--task", f"no task id matches {', '.join(map(repr, patterns))}"
            )
        tasks = chosen
    return tasks[:limit] if limit else tasks


def select_arms(suite: Suite, names: list[str], path: Path) -> Suite:
    """Only the named arms (``--arm``); a primary comparison naming a dropped arm is dropped."""
    known = [a.name for a in suite.arms]
    for name in names:
        if name not in known:
            raise ConfigError(
                str(path), "--arm", f"unknown arm '{name}' (arms: {', '.join(known)})"
            )
    arms = [a for a in suite.arms if a.name in names]
    kept = {a.name for a in arms}

    def keep(primary):
        return primary if primary and {primary.baseline, primary.candidate} <= kept else None

    report = suite.report.model_copy(update={"primary": keep(suite.report.primary)})
    gate = (
        suite.gate.model_copy(update={"primary": keep(suite.gate.primary)}) if suite.gate else None
    )
    return suite.model_copy(update={"arms": arms, "report": report, "gate": gate})
