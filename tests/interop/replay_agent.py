"""A test agent that plays a fixed trajectory per task, given in ``params.steps``:
``{task_id: [{"name": tool | "respond" | "final_answer", "kwargs": {...}}, ...]}``
(``final_answer``: the answer the agent returns without saying it)."""

from __future__ import annotations

from typing import Any

from harness.agents.base import Agent, AgentContext, AgentResult
from harness.config.models import Options


class ReplayParams(Options):
    steps: dict[str, list[dict[str, Any]]]


class ReplayAgent(Agent):
    name = "replay"
    Params = ReplayParams

    async def run(self, ctx: AgentContext) -> AgentResult:
        task_id = getattr(ctx, "task_id", None) or ctx.task.id
        said = None
        for step in ctx.params["steps"].get(task_id, []):
            if step["name"] == "final_answer":  # returned, never said to the user
                said = step["kwargs"]["content"]
            elif step["name"] == "respond":
                said = step["kwargs"]["content"]
                ctx.say(said)
            else:
                await ctx.call_tool(step["name"], step["kwargs"])
        return AgentResult(answer=said)
