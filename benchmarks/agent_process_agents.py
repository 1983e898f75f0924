"""Agents for bench_agent_process.py: a module:Class agent that answers at once (it runs in a
child process of its own, like every agent outside ``harness.agents``)."""

from __future__ import annotations

from harness.agents import Agent, AgentContext, AgentResult


class Answer(Agent):
    name = "answer"

    async def run(self, ctx: AgentContext) -> AgentResult:
        return AgentResult(answer=None)
