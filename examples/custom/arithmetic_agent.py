"""An example agent to copy: it answers "What is A + B?" questions.

An agent is a class with a ``name`` and ``async def run(self, ctx) -> AgentResult``. The
harness builds a fresh instance for every trial attempt and passes an ``AgentContext``:

- ``ctx.instruction``: what the user asked (the task's instruction, or its variant's);
- ``ctx.params``: the arm's ``params:`` from the suite, as written;
- ``ctx.seed``: the trial's seed (both arms' trial i of a task share it);
- ``ctx.run_command(cmd)`` / ``ctx.call_tool(name, args)``: act in the sandbox, each call
  recorded in the trajectory and counted against the step budget;
- ``ctx.say(text)``: tell the user something (graded by answer-reading graders);
- ``ctx.charge(tokens_in=..., tokens_out=..., cost_usd=...)``: account model usage; raises
  ``BudgetExceeded`` past a budget, which ends the trial as the agent's failure.

Return ``AgentResult(answer=..., confidence=...)``. Raise ``AgentFailure`` for a failure of
the agent's own; any other exception is recorded as a harness error with its message.
"""

from __future__ import annotations

import re

from harness.agents import Agent, AgentContext, AgentResult

_SUM = re.compile(r"(-?\d+(?:\.\d+)?)\s*\+\s*(-?\d+(?:\.\d+)?)")


class ArithmeticAgent(Agent):
    name = "arithmetic-example"

    async def run(self, ctx: AgentContext) -> AgentResult:
        match = _SUM.search(ctx.instruction)
        if match is None:
            ctx.say("I can only add two numbers.")
            return AgentResult(answer=None, confidence=0.0)
        total = float(match.group(1)) + float(match.group(2))
        answer = f"{total:g}"
        ctx.say(f"The sum is {answer}.")
        return AgentResult(answer=answer, confidence=1.0)
