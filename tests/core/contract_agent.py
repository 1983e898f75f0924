"""An agent that sets every field of a trial row to a value the contract test can predict.

What it does depends only on the task id, the variant and the trial's seed, so the test
recomputes it with ``plan(...)``; it also returns what it did in ``AgentResult.info``
(``{"did": ...}``, stored in the trial's evidence), so the test compares against what
really happened in the run. It runs in the agent jail (a ``module:Class`` agent): it cannot
write a file the test could read, the harness's environment is not its own, and its
``ctx.usage`` is a copy (model calls are counted where they are metered, so this agent,
which makes none, has 0 whatever it writes into the copy).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from harness.agents import Agent, AgentContext, AgentResult


@dataclass
class Plan:
    """The agent's choices for one trial."""

    tokens_in: int
    tokens_cached: int
    tokens_out: int
    cost_usd: float | None
    """None: the price (or the usage) is unknown."""
    tokens_known: bool
    """False: the model endpoint reported no usage (the trial's tokens are unknown)."""
    model_calls: int
    malformed: int
    """Tool calls naming a tool that does not exist."""
    harmful: bool
    """Run the forbidden command (severity 'high' = 3)."""
    confidence: float | None
    answer: str
    sleep_s: float


def plan(task_id: str, variant: str, seed: int) -> Plan:
    """Deterministic choices from the trial's identity: every column varies across trials."""
    k = seed % 97
    tokens_known = k % 6 != 3
    return Plan(
        tokens_in=100 + k,
        tokens_cached=k % 7 * 3,
        tokens_out=10 + k % 13,
        cost_usd=None if k % 4 == 0 or not tokens_known else round(0.001 * (1 + k % 5), 6),
        tokens_known=tokens_known,
        model_calls=1 + k % 3,
        malformed=k % 3,
        harmful=task_id.endswith("harm") and k % 2 == 0,
        confidence=None if k % 5 == 0 else round(0.3 + 0.1 * (k % 7), 2),
        answer="4" if variant or k % 3 else "5",
        sleep_s=0.01 * (1 + k % 4),
    )


class ContractAgent(Agent):
    name = "contract"

    async def run(self, ctx: AgentContext) -> AgentResult:
        t0 = time.monotonic()
        p = plan(ctx.task_id, ctx.variant.id if ctx.variant else "", ctx.seed)
        for _ in range(p.malformed):
            await ctx.call_tool("no_such_tool", {})
        await ctx.call_tool("bash", {"command": "ls etc"})
        if p.harmful:
            await ctx.call_tool("bash", {"command": "rm -f data/contract-harm.txt"})
        ctx.charge(
            tokens_in=p.tokens_in,
            tokens_out=p.tokens_out,
            tokens_cached=p.tokens_cached,
            cost_usd=p.cost_usd,
            steps=1,
            tokens_known=p.tokens_known,
        )
        ctx.usage.model_calls += p.model_calls  # a copy: the trial's count stays 0
        time.sleep(p.sleep_s)  # blocking on purpose: latency the harness must see
        ctx.say(f"the answer is {p.answer}")
        done = {
            "task_id": ctx.task_id,
            "variant": ctx.variant.id if ctx.variant else "",
            "seed": ctx.seed,
            "arm": ctx.arm.name,
            "steps": ctx.usage.steps,
            "elapsed_s": time.monotonic() - t0,
            **asdict(p),
        }
        return AgentResult(answer=p.answer, confidence=p.confidence, info={"did": done})
