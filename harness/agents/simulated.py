"""simulated: a seeded synthetic agent with a planted success probability per task.

It gives comparisons a known truth. Each task's success probability is fixed per arm:
``p`` (for every task), a per-task ``simulated: {p: ...}`` in the task file, or a draw from
Beta(``a``, ``b``) at a task-level uniform shared by all arms (so arms with different
Beta parameters are ordered task by task), plus an optional planted ``shift``. A trial
succeeds when the trial's uniform is below p. That uniform is drawn per arm from the trial
seed and the arm's name, so arms are independent given their tasks, as real agents are, and an
A/A arm shows a real noise floor. ``common_random_numbers: true`` draws it from the trial seed
alone, shared by every arm with that setting: comparisons get less noisy, but an A/A arm then
agrees with its baseline exactly and its floor is degenerate (reports say so).
On success it performs the reference solution; on failure it acts out one realistic
failure mode (a wrong or missing answer; with environments, the mutants of
``harness.agents.mutants``: a claim without action, a side effect, a wrong value, a wrong
order, a skipped step).

Params: p | a, b; shift (added to p, clipped to [0, 1]); population_seed (default 0);
common_random_numbers (default false: independent trial draws per arm);
failure_modes (names to choose from); confidence ("calibrated" | "overconfident" | none);
variant_drop (relative drop of p on meaning-preserving variants); delay_s (seconds to
"think" before acting, to simulate latency).
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import Field

from harness.agents.base import Agent, AgentResult, ReferenceContext
from harness.agents.oracle import perform_solution
from harness.config.models import Options
from harness.seeds import derive_seed


def task_probability(params: dict, task, variant: str = "") -> float:
    """The planted success probability of ``task`` for an arm with ``params``."""
    if "p" in task.simulated:
        p = float(task.simulated["p"])
    elif params.get("p") is not None:
        p = float(params["p"])
    else:
        from scipy.special import betaincinv

        a, b = float(params.get("a", 2.0)), float(params.get("b", 2.0))
        u = random.Random(derive_seed("task-u", params.get("population_seed", 0), task.id)).random()
        p = float(betaincinv(a, b, u))
    p += float(params.get("shift", 0.0))
    if variant:
        p *= 1.0 - float(params.get("variant_drop", 0.0))
    return min(1.0, max(0.0, p))


def trial_draw_seed(params: dict, seed: int, arm: str) -> int:
    """The seed of a trial's success draw: per arm unless common random numbers are asked for
    (then the trial seed itself, shared by every arm of the matched block)."""
    if params.get("common_random_numbers"):
        return seed
    return derive_seed("simulated-trial", seed, arm)


def failure_modes(task) -> list[str]:
    """The failure modes (mutants) that apply to ``task``: when the task changes state, the
    acting mistakes; otherwise a wrong or missing answer."""
    from harness.agents.mutants import applicable_mutants

    names = applicable_mutants(task)
    acting = [n for n in names if n not in ("wrong_answer", "no_answer")]
    return acting or names or ["no_answer"]


class SimulatedParams(Options):
    """``params`` of the simulated agent: planted per-task success probabilities (``p`` for
    every task, else Beta(``a``, ``b``) draws), for demos and for checking the statistics."""

    p: float | None = Field(None, ge=0, le=1, description="success probability of every task")
    a: float = Field(2.0, gt=0, description="Beta(a, b) of per-task probabilities, without p")
    b: float = Field(2.0, gt=0)
    """Beta(a, b) of per-task probabilities, without p"""
    population_seed: int = Field(0, description="seed of the per-task uniforms")
    common_random_numbers: bool = Field(
        False, description="draw each trial's uniform from the trial seed alone, shared by arms"
    )
    shift: float = Field(0.0, description="added to p, clipped to [0, 1]")
    variant_drop: float = Field(0.0, ge=0, le=1, description="relative drop of p on variants")
    confidence: Literal["calibrated", "overconfident"] | None = None
    """the stated confidence it reports: calibrated, overconfident, or none"""
    failure_modes: list[str] | None = Field(None, description="failure modes to choose from")
    delay_s: float = Field(0.0, ge=0, description="seconds to think before acting")


class SimulatedAgent(Agent):
    name = "simulated"
    reference_solution = True
    Params = SimulatedParams

    async def run(self, ctx: ReferenceContext) -> AgentResult:  # type: ignore[override]
        params = ctx.params
        options = self.params_as(ctx, SimulatedParams)
        variant = ctx.variant.id if ctx.variant else ""
        p = task_probability(params, ctx.task, variant)
        rng = random.Random(trial_draw_seed(params, ctx.seed, ctx.arm.name))
        success = rng.random() < p
        if options.delay_s:
            import anyio

            await anyio.sleep(options.delay_s)
        confidence = None
        style = options.confidence
        if style == "calibrated":
            confidence = p
        elif style == "overconfident":
            confidence = min(1.0, p + 0.3)
        if success:
            answer = await perform_solution(ctx)
            return AgentResult(answer=answer, confidence=confidence, info={"planted_p": p})
        from harness.agents.mutants import MUTANTS

        modes = failure_modes(ctx.task)
        allowed = options.failure_modes
        names = [n for n in modes if not allowed or n in allowed] or modes
        mode = random.Random(derive_seed("mode", ctx.seed, ctx.arm.name)).choice(names)
        result = await MUTANTS[mode](ctx)
        result.confidence = confidence
        result.info.update(planted_p=p, failure_mode=mode)
        return result
