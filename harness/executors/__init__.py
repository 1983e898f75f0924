"""Executors, registered by name: where a run's trials execute.

The orchestrator keeps the plan order, the concurrency limit, resume and the store writes;
an executor only turns one job into its finished ``TrialRecord``. ``local`` runs the trial
in this process; ``ray`` runs it as a task on a Ray cluster and streams the record back.
Adding a backend touches a new file and the table below, never the orchestrator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the package is imported by config validation: keep it light
    from harness.plan import Job
    from harness.trial import RunContext, TrialRecord

EXECUTORS: dict[str, str] = {
    "local": "harness.executors:LocalExecutor",
    "ray": "harness.executors.ray:RayExecutor",
}


class Executor(Protocol):
    """Runs one job to its record; ``aclose`` releases what the executor holds."""

    async def __call__(self, job: Job) -> TrialRecord: ...

    async def aclose(self) -> None: ...


class LocalExecutor:
    """Trials run in this process, in the orchestrator's event loop (the default)."""

    name = "local"

    def __init__(self, rc: RunContext, sandbox: str, **_: Any):
        self.rc = rc

    async def __call__(self, job: Job) -> TrialRecord:
        from harness.trial import run_trial

        return await run_trial(job, self.rc)

    async def aclose(self) -> None:
        return None


def open_executor(
    name: str,
    rc: RunContext,
    sandbox: str,
    *,
    address: str | None = None,
    options: dict[str, Any] | None = None,
) -> Executor:
    """Instantiate the executor registered as ``name`` for run ``rc`` (a blocking call: the
    Ray backend connects to its cluster here, so a wrong address fails before any trial)."""
    target = EXECUTORS.get(name, name)
    if ":" not in target:
        raise KeyError(f"unknown executor '{name}' (known: {', '.join(EXECUTORS)})")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)(
        rc, sandbox, address=address, **(options or {})
    )


__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "open_executor"]
