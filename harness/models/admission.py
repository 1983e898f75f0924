"""Admission of an agent program's model calls: budgets are caps, not after-the-fact checks.

A call reaches the upstream only when the trial still has budget left for it:

- with a token or cost budget, one call is in flight at a time (the others wait their
  turn), and a call is admitted only while the tokens (or dollars) spent so far are below
  the budget. Whatever one call costs is known before the next is sent, so a trial
  overshoots its budget by at most one call, however many calls its program makes at once;
- steps (one per model call) are reserved when a call is admitted, so parallel calls never
  exceed ``max_steps``;
- a call refused for want of budget raises ``BudgetExceeded`` before anything is sent.

When the trial stops, calls still in flight get ``GRACE_S`` to finish and be metered as
usual (their tokens were spent upstream whether or not the program reads the reply);
``drain`` waits for them.

It also keeps what the budgets are checked against beyond the context's measured usage:
the dollars of calls with reported usage, and the stated estimate (``CHARS_PER_TOKEN``) for
calls whose upstream reported none, kept apart from measured usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from harness.config.models import Budgets, Price
from harness.errors import BudgetExceeded
from harness.models.client import ModelUsage
from harness.models.metering import CHARS_PER_TOKEN
from harness.models.pricing import cost

GRACE_S = 10.0
"""Seconds calls in flight get to finish (and be metered) once their trial stops."""


class Admission:
    """Admits one trial's model calls within its budgets (see the module docstring).
    ``tokens`` and ``steps`` read the trial's measured usage."""

    def __init__(
        self,
        budgets: Budgets,
        tokens: Callable[[], int],
        steps: Callable[[], int],
        price: Price | None,
    ):
        self.budgets, self._tokens, self._steps, self._price = budgets, tokens, steps, price
        self.known_cost = 0.0
        """Dollars of the calls whose upstream reported usage."""
        self.estimated_tokens = 0
        self.estimated_cost = 0.0
        """Budget estimates for calls without reported usage (never reported as measured)."""
        self.serial = budgets.max_tokens is not None or budgets.max_cost_usd is not None
        """One call in flight at a time: a token or cost budget is set."""
        self._turn = anyio.Lock()
        self._unsettled: set[int] = set()
        """Tasks whose admitted call holds a step not charged yet (one call per task: the
        proxy serves one request at a time per connection)."""
        self.in_flight = 0
        self._idle = anyio.Event()
        self._idle.set()

    @asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """Hold an admitted call for the duration of the block (waiting for its turn when
        calls are serial); raises ``BudgetExceeded`` when no budget is left for it."""
        if self.serial:
            async with self._turn:
                self._admit()
                async with self._held():
                    yield
        else:
            self._admit()
            async with self._held():
                yield

    @asynccontextmanager
    async def _held(self) -> AsyncIterator[None]:
        if self.in_flight == 0:
            self._idle = anyio.Event()
        self.in_flight += 1
        task = anyio.get_current_task().id
        self._unsettled.add(task)
        try:
            yield
        finally:
            self._unsettled.discard(task)
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    def settle(self) -> None:
        """The running task's call has its step charged: it reserves none any more."""
        self._unsettled.discard(anyio.get_current_task().id)

    def spent(self) -> tuple[int, float | None]:
        """Tokens and dollars spent so far, estimates included (dollars None: no price)."""
        tokens = self._tokens() + self.estimated_tokens
        dollars = self.known_cost + self.estimated_cost if self._price is not None else None
        return tokens, dollars

    def add_estimate(self, estimate: ModelUsage) -> None:
        """Count a call without reported usage at its stated estimate; raise
        ``BudgetExceeded`` when the estimate, added to the rest, breaks a budget."""
        self.estimated_tokens += estimate.input_tokens + estimate.output_tokens
        self.estimated_cost += cost(estimate, self._price) or 0.0
        b = self.budgets
        note = (
            f"of which {self.estimated_tokens} estimated at {CHARS_PER_TOKEN} characters per "
            "token: the upstream reported no usage"
        )
        tokens, dollars = self.spent()
        if b.max_tokens is not None and tokens > b.max_tokens:
            raise BudgetExceeded("max_tokens", f"{tokens} tokens ({note}) > {b.max_tokens}")
        if b.max_cost_usd is not None and dollars is not None and dollars > b.max_cost_usd:
            raise BudgetExceeded(
                "max_cost_usd",
                f"${dollars:.6g} (estimated cost included: {note}) > ${b.max_cost_usd}",
            )

    def _admit(self) -> None:
        b = self.budgets
        steps = self._steps() + len(self._unsettled)
        if b.max_steps is not None and steps >= b.max_steps:
            raise BudgetExceeded(
                "max_steps", f"{steps} of {b.max_steps} steps used or in flight: no call is left"
            )
        tokens, dollars = self.spent()
        if b.max_tokens is not None and tokens >= b.max_tokens:
            raise BudgetExceeded(
                "max_tokens", f"{tokens} tokens spent of {b.max_tokens}: no budget for another call"
            )
        if b.max_cost_usd is not None and dollars is not None and dollars >= b.max_cost_usd:
            raise BudgetExceeded(
                "max_cost_usd",
                f"${dollars:.6g} spent of ${b.max_cost_usd}: no budget for another call",
            )

    def would_exceed(self, usage: ModelUsage) -> bool:
        """Would charging ``usage`` (a stream's figure so far) break a token or cost budget?
        Checked as a stream's usage grows, so a budget can end the call while it runs."""
        b = self.budgets
        tokens, dollars = self.spent()
        if (
            b.max_tokens is not None
            and tokens + usage.input_tokens + usage.output_tokens > b.max_tokens
        ):
            return True
        call_cost = cost(usage, self._price)
        return (
            b.max_cost_usd is not None
            and dollars is not None
            and call_cost is not None
            and dollars + call_cost > b.max_cost_usd
        )

    async def drain(self, grace_s: float | None = None) -> None:
        """Wait (at most ``grace_s``, default ``GRACE_S``) for the calls in flight to finish
        and be metered."""
        with anyio.move_on_after(GRACE_S if grace_s is None else grace_s):
            await self._idle.wait()


__all__ = ["GRACE_S", "Admission"]
