"""Executors, registered by name: where a run's trials execute.

The orchestrator keeps the plan order, the concurrency limit, resume and the store writes;
an executor only turns one job into its finished ``TrialRecord``. ``local`` runs the trial
in this process; ``ray`` runs it as a task on a Ray cluster and streams the record back.
Adding a backend touches a new file and the table below, never the orchestrator.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar

from harness.config.models import Options
from harness.registry import Registry

if TYPE_CHECKING:  # the trial machinery is imported when a trial runs, not at resolve time
    from harness.plan import Job
    from harness.trial import RunContext, TrialRecord


class Executor(abc.ABC):
    """Runs one job to its record; ``aclose`` releases what the executor holds.

    ``Options`` is the typed model of the suite's ``executor_options`` (checked when the
    suite is resolved); the constructor gets the validated instance. Construction may block
    (Ray connects to its cluster there), so a wrong address fails before any trial.
    """

    name: ClassVar[str]
    Options: ClassVar[type[Options]] = Options

    def __init__(
        self, rc: RunContext, sandbox: str, *, address: str | None = None, options: Any = None
    ) -> None:
        self.rc = rc

    @abc.abstractmethod
    async def __call__(self, job: Job) -> TrialRecord: ...

    async def aclose(self) -> None:
        """Release what the executor holds. Default: nothing."""
        return None


class LocalExecutor(Executor):
    """Trials run in this process, in the orchestrator's event loop (the default)."""

    name = "local"

    async def __call__(self, job: Job) -> TrialRecord:
        from harness.trial import run_trial

        return await run_trial(job, self.rc)


EXECUTORS: Registry[Executor] = Registry(
    "executor",
    Executor,
    {"local": "harness.executors:LocalExecutor", "ray": "harness.executors.ray:RayExecutor"},
    hint="subclass harness.executors.Executor",
)


__all__ = ["EXECUTORS", "Executor", "LocalExecutor"]
