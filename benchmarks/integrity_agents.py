"""Agents for bench_integrity.py: an honest one that works for ``work_s`` seconds, and one
that blocks its event loop for ten times its time budget (``time.sleep``)."""

from __future__ import annotations

import time

import anyio

from harness.agents.base import AgentContext, AgentResult


class Worker:
    name = "worker"

    async def run(self, ctx: AgentContext) -> AgentResult:
        if ctx.params.get("block") and ctx.seed % 10 == 0:
            time.sleep(10 * (ctx.budgets.timeout_s or 1))
        await anyio.sleep(float(ctx.params.get("work_s", 1.0)))
        return AgentResult(answer="4")
