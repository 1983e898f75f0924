"""Executors, registered by name: where a run's trials execute.

The orchestrator keeps the plan order, the concurrency limit, resume and the store writes;
an executor only turns one job into its finished ``TrialRecord``. ``local`` runs the trial
in this process; ``ray`` runs it as a task on a Ray cluster and streams the record back.
Adding a backend touches a new file and the table below, never the orchestrator.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.config.loader import ResolvedSuite
from harness.config.models import Options
from harness.registry import Registry, RegistryError

if TYPE_CHECKING:  # the trial machinery is imported when a trial runs, not at resolve time
    from harness.plan import Job
    from harness.run_context import RunContext
    from harness.trial_rows import TrialRecord


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


@dataclass(frozen=True)
class ExecutorBinding:
    """The suite's executor backend with its validated options."""

    name: str
    cls: type[Executor]
    options: Options

    def open(self, rc: RunContext, sandbox: str, address: str | None) -> Executor:
        """Blocking: Ray connects to its cluster here."""
        return self.cls(rc, sandbox, address=address, options=self.options)


def bind(config: ResolvedSuite) -> ExecutorBinding:
    """The suite's ``executor`` looked up and its ``executor_options`` validated: a
    ``ConfigError`` naming the field and line (exit 2) before any run row. ``harness run``
    binds it right after loading the suite; nothing else runs trials through an executor."""
    from harness.resolve import checked_options, config_error

    suite = config.suite
    try:
        cls = EXECUTORS.load(suite.executor)
    except RegistryError as exc:
        raise config_error(config, ("executor",), str(exc)) from None
    options = checked_options(
        config, ("executor_options",), cls.Options.model_validate, suite.executor_options
    )
    return ExecutorBinding(suite.executor, cls, options)


__all__ = ["EXECUTORS", "Executor", "ExecutorBinding", "LocalExecutor", "bind"]
