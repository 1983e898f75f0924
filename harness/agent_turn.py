"""The agent's turn of a trial: run it under its time budget, whatever it does, and check
what it returns.

Built-in agents (``harness.agents``) are ours and cooperate with cancellation: they run in
the trial's event loop under ``anyio.fail_after``. Every other agent (``module:Class``) is
treated as an adversary and runs out of the harness process, in a child process of its own
(``harness.agent_process``): it reaches its context only through a pipe, holds copies of
its trajectory, usage and budgets, and is killed at its time budget plus ``GRACE_S``
whatever it is doing (blocked in C, holding its GIL, ignoring cancellation).

Anything raised by an adversary's code (``SystemExit`` and ``KeyboardInterrupt`` included)
fails its trial with reason ``agent_error``; infrastructure errors the harness saw under it
(a dead sandbox, an unreachable model API) stay infrastructure errors. A result that is not
a well-formed ``AgentResult`` fails with ``invalid_agent_result``.
"""

from __future__ import annotations

from typing import Any

import anyio

from harness import errors
from harness.agent_process import ChildAgent
from harness.agent_process.host import GRACE_S
from harness.agents.base import AgentContext, AgentResult, validate_result


def is_builtin(cls: type) -> bool:
    """Agents of this package cooperate with cancellation; all others are adversaries."""
    return cls.__module__.startswith("harness.agents.")


async def run_agent(agent: Any, ctx: AgentContext) -> AgentResult:
    """Run ``agent`` on ``ctx`` under ``ctx.budgets.timeout_s``; return its checked result.

    Raises ``BudgetExceeded('timeout')``, another ``AgentFailure``, or an ``InfraError``."""
    if isinstance(agent, ChildAgent):  # its own process; the host enforces the budget
        return await agent.run(ctx)
    if not is_builtin(type(agent)):
        raise TypeError(f"{type(agent).__name__} is not a built-in agent: run it in a child")
    timeout = ctx.budgets.timeout_s
    try:
        with anyio.fail_after(timeout) if timeout else _no_scope():
            result = await agent.run(ctx)
    except TimeoutError:
        raise errors.BudgetExceeded("timeout", f"agent ran over {timeout}s") from None
    return validate_result(result)


class _no_scope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


__all__ = ["GRACE_S", "is_builtin", "run_agent", "validate_result"]
