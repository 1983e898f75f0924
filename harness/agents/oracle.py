"""oracle: runs the task's reference solution. Proves a task is solvable and its graders
accept a correct solution."""

from __future__ import annotations

from harness.agents.base import Agent, AgentResult, ReferenceContext
from harness.errors import AgentFailure


async def perform_solution(ctx: ReferenceContext) -> str | None:
    """Execute the reference solution's commands and tool calls; return its answer.

    The answer is said last, or just before a tool that ends the episode (a hand-over),
    since nothing can be said after it."""
    solution = ctx.task.solution
    if solution is None:
        raise AgentFailure("no_solution", f"task '{ctx.task.id}' declares no reference solution")
    for command in solution.commands:
        await ctx.run_command(command)
    ending = {t.name for t in ctx.tools if t.terminates}
    said = solution.answer is None
    for action in solution.actions:
        if action.tool in ending and not said:
            ctx.say(solution.answer or "")
            said = True
        await ctx.call_tool(action.tool, action.args)
    if not said:
        ctx.say(solution.answer or "")
    return solution.answer


class OracleAgent(Agent):
    name = "oracle"
    reference_solution = True

    async def run(self, ctx: ReferenceContext) -> AgentResult:  # type: ignore[override]
        return AgentResult(answer=await perform_solution(ctx), confidence=1.0)
