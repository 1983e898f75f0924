"""What every trial of a run shares (``RunContext``), and the one place it is built.

The runner, ``harness validate`` and a Ray worker all build it with ``run_context``: the
suite's retry policy and circuit breaker come from the resolved suite here, never restated
by a caller. Trials read it; nothing in it writes the store.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graders import Grader
from harness.breaker import CircuitBreaker
from harness.config.models import Task
from harness.sandbox.base import SandboxProvider
from harness.store.tables import AttemptRow

if TYPE_CHECKING:  # resolving happens before any trial; trials only read its result
    from harness.resolve import Resolved


@dataclass
class RunContext:
    """What every trial of a run shares. Build it with ``run_context``."""

    run_id: str
    resolved: Resolved
    provider: SandboxProvider | None
    image_ids: dict[str, str | None]
    backoff_s: float
    breaker: CircuitBreaker
    interrupted: list[AttemptRow] = field(default_factory=list)
    """Attempts cut short by cancellation; the orchestrator records them."""
    _frozen: dict[str, Task] = field(default_factory=dict)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.resolved.suite.retries.max_attempts, self.backoff_s)

    def graders(self, task: Task) -> list[Grader]:
        """The task's graders, built (and validated) once from its specs when the suite was
        resolved: nothing done to the task object afterwards changes what they expect."""
        return self.resolved.graders[task.id]

    def frozen_task(self, task: Task) -> Task:
        """The graders' own copy of the task, taken once per run (never given to agents)."""
        if task.id not in self._frozen:
            self._frozen[task.id] = copy.deepcopy(task)
        return self._frozen[task.id]


def run_context(
    run_id: str,
    resolved: Resolved,
    provider: SandboxProvider | None,
    image_ids: dict[str, str | None],
    *,
    backoff_s: float | None = None,
) -> RunContext:
    """The run's context: the suite's retries (``backoff_s`` overrides their backoff:
    ``harness validate`` retries fast) and a circuit breaker that stops after the suite's
    ``retries.stop_after`` failures of one cause and probes the provider's health."""
    retries = resolved.suite.retries
    breaker = CircuitBreaker(stop_after=retries.stop_after)
    if provider is not None:
        breaker.health = provider.healthy
    return RunContext(
        run_id,
        resolved,
        provider,
        image_ids,
        backoff_s=retries.backoff_s if backoff_s is None else backoff_s,
        breaker=breaker,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """Infrastructure-only retries, the same for every executor: up to ``max_attempts``
    attempts per trial, waiting ``delay(n)`` after failed attempt ``n`` (exponential
    backoff from ``backoff_s`` with jitter, so retries of many trials do not align)."""

    max_attempts: int
    backoff_s: float

    def delay(self, number: int) -> float:
        return self.backoff_s * (2.0 ** (number - 1)) * (0.5 + random.random())
