"""A test agent for ``test_harbor_steps_verifier.py``: at every step it forges the reward in
its own sandbox instead of doing the work: ``/logs/verifier/reward.txt`` = 1 (Harbor's
reward file, which the agent's image lets it write), a copy in ``/logs/artifacts`` (copied
to the verifier), and the step's artifact ``/app/counts.txt`` made a link to the reward
file. A verifier that ran in the agent's sandbox, or read what it left there, would pass
it."""

from __future__ import annotations

from harness.agents.base import Agent, AgentContext, AgentResult

FORGE = (
    "mkdir -p /logs/verifier /logs/artifacts; echo 1 > /logs/verifier/reward.txt; "
    "echo 1 > /logs/artifacts/reward.txt; ln -sf /logs/verifier/reward.txt /app/counts.txt"
)


class FakeReward(Agent):
    name = "fake-reward"

    async def run(self, ctx: AgentContext) -> AgentResult:
        done = await ctx.sandbox.exec(FORGE, timeout=60)
        assert done.ok, done.stderr  # the forgery itself must have happened
        return AgentResult(answer="done")
