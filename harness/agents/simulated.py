"""simulated: a seeded synthetic agent with a planted success probability per task.

It gives comparisons a known truth. Each task's success probability is fixed per arm:
``p`` (for every task), a per-task ``simulated: {p: ...}`` in the task file, or a draw from
Beta(``a``, ``b``) at a task-level uniform shared by all arms (so arms with different
Beta parameters are ordered task by task), plus an optional planted ``shift``. A trial
succeeds when the trial's uniform, drawn from the trial seed every arm shares, is below p.
On success it performs the reference solution; on failure it acts out one realistic
failure mode (a wrong or missing answer; with environments, the mutants of
``harness.agents.mutants``: a claim without action, a side effect, a wrong value, a wrong
order, a skipped step).

Params: p | a, b; shift (added to p, clipped to [0, 1]); population_seed (default 0);
failure_modes (names to choose from); confidence ("calibrated" | "overconfident" | none);
variant_drop (relative drop of p on meaning-preserving variants).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

from harness.agents.base import AgentContext, AgentResult
from harness.agents.oracle import perform_solution
from harness.plan import derive_seed


def task_probability(params: dict, task, variant: str = "") -> float:
    """The planted success probability of ``task`` for an arm with ``params``."""
    if "p" in task.simulated:
        p = float(task.simulated["p"])
    elif "p" in params:
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


def _wrong(answer: str) -> str:
    from graders.answer_match import last_number

    value = last_number(answer)
    if value is not None:
        return f"{value + 1:g}"
    return f"not {answer}"


async def _wrong_answer(ctx: AgentContext) -> str | None:
    sol = ctx.task.solution
    answer = _wrong(sol.answer) if sol and sol.answer else "I am not sure."
    ctx.say(answer)
    return answer


async def _no_answer(ctx: AgentContext) -> str | None:
    return None


BASIC_MODES: dict[str, Callable[[AgentContext], Awaitable[str | None]]] = {
    "wrong_answer": _wrong_answer,
    "no_answer": _no_answer,
}


def failure_modes(task) -> dict[str, Callable[[AgentContext], Awaitable[str | None]]]:
    """The failure modes that apply to ``task`` (mutants when the task acts on state)."""
    modes = dict(BASIC_MODES)
    try:
        from harness.agents import mutants
    except ImportError:  # pragma: no cover - mutants arrive with the graders work
        return modes
    for name in mutants.applicable_mutants(task):
        modes[name] = mutants.MUTANTS[name]
    if task.solution and (task.solution.actions or task.solution.commands):
        # With state to change, an answer-only failure is not realistic; prefer mutants.
        acting = {k: v for k, v in modes.items() if k not in BASIC_MODES}
        if acting:
            return acting
    return modes


class SimulatedAgent:
    name = "simulated"

    async def run(self, ctx: AgentContext) -> AgentResult:
        params = ctx.params
        variant = ctx.variant.id if ctx.variant else ""
        p = task_probability(params, ctx.task, variant)
        rng = random.Random(ctx.seed)
        success = rng.random() < p
        confidence = None
        style = params.get("confidence")
        if style == "calibrated":
            confidence = p
        elif style == "overconfident":
            confidence = min(1.0, p + 0.3)
        if success:
            answer = await perform_solution(ctx)
            return AgentResult(answer=answer, confidence=confidence, info={"planted_p": p})
        modes = failure_modes(ctx.task)
        allowed = params.get("failure_modes")
        names = sorted(n for n in modes if not allowed or n in allowed) or sorted(modes)
        mode = random.Random(derive_seed("mode", ctx.seed, ctx.arm.name)).choice(names)
        answer = await modes[mode](ctx)
        return AgentResult(
            answer=answer, confidence=confidence, info={"planted_p": p, "failure_mode": mode}
        )
