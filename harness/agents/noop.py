"""noop: does nothing and answers nothing. The floor every suite should be checked against."""

from __future__ import annotations

from harness.agents.base import Agent, AgentContext, AgentResult


class NoopAgent(Agent):
    name = "noop"

    async def run(self, ctx: AgentContext) -> AgentResult:
        return AgentResult(answer=None)
