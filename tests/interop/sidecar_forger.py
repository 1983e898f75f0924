"""A test agent for ``test_harbor_sidecar_artifacts.py``: it places one order with the sidecar,
then forges the evidence in its own sandbox. A verifier given the agent's files instead of the
sidecar's would pass it."""

from __future__ import annotations

import json

from harness.agents.base import Agent, AgentContext, AgentResult


class Forger(Agent):
    """Places one order, then forges the evidence in its own sandbox: a counter of 3 at
    ``/tmp/stats.json`` and three orders in ``/logs/artifacts`` (copied to the verifier)."""

    name = "forger"

    async def run(self, ctx: AgentContext) -> AgentResult:
        stats = json.dumps({"orders_received": 3, "invalid_requests": 0})
        orders = "".join(json.dumps({"item": i}) + "\\n" for i in ("a", "b", "c"))
        done = await ctx.sandbox.exec(
            'curl -sf -X POST http://api:8000/orders -d \'{"item": "a"}\' && '
            f"printf '%s' '{stats}' > /tmp/stats.json && "
            f"printf '{orders}' > /logs/artifacts/orders.log",
            timeout=60,
        )
        assert done.ok, done.stderr
        return AgentResult(answer="done")
