"""What a trial gives the agent and how its turn and its grading are run: the agent's
context (copies of what a user would give it), its turn (a sandbox it killed is its
failure), and the graders' verdicts (a grader that crashes is a grader error). Shared by
single-step trials (``harness.trial``) and multi-step ones (``harness.trial_multistep``)."""

from __future__ import annotations

import copy
from typing import Any, TypedDict

from graders import Evidence, Grader, Verdict
from harness import errors
from harness.agent_turn import run_agent
from harness.agents import AgentContext, AgentResult
from harness.agents.base import ReferenceContext, Usage, is_reference_agent
from harness.agents.user import SimulatedUser, make_user
from harness.config.models import Arm, Budgets, Environment, Suite, Task, Variant
from harness.errors import traceback_text
from harness.plan import Job
from harness.sandbox.base import Sandbox
from harness.tools.client import ToolServer


class _ContextArgs(TypedDict):
    """The fields an ``AgentContext`` and a ``ReferenceContext`` share, built once for either."""

    task_id: str
    arm: Arm
    instruction: str
    sandbox: Sandbox
    environment: Environment | None
    seed: int
    budgets: Budgets
    variant: Variant | None
    user: SimulatedUser | None
    user_opens: bool
    tool_server: ToolServer | None
    usage: Usage


def agent_context(
    agent_cls: type,
    task: Task,
    arm: Arm,
    variant: Variant | None,
    sandbox: Sandbox,
    env: Environment | None,
    job: Job,
    suite: Suite,
    server: ToolServer | None,
    usage: Usage,
) -> AgentContext:
    """What the agent gets: what a user would give it, as copies of its own. The task
    itself (graders, solution) only for built-in reference agents, and then a deep copy."""
    instruction = variant.instruction if variant and variant.instruction else task.instruction
    user = None
    if task.user is not None:
        # The agent's Params validated it (an int or None) when the suite was resolved.
        turns = arm.params.get("max_user_turns")
        user = make_user(
            copy.deepcopy(task.user),
            instruction=instruction,
            seed=job.seed,
            max_turns=turns if isinstance(turns, int) else None,
        )
    common = _ContextArgs(
        task_id=task.id,
        arm=copy.deepcopy(arm),
        instruction=instruction,
        sandbox=sandbox,
        environment=copy.deepcopy(env),  # its tools list is the agent's to break
        seed=job.seed,
        budgets=suite.budgets.merged(task.budgets).model_copy(deep=True),
        variant=copy.deepcopy(variant),
        user=user,
        user_opens=task.user is not None and task.user.goal is not None,
        tool_server=server,
        usage=usage,
    )
    if is_reference_agent(agent_cls):
        return ReferenceContext(**common, task=copy.deepcopy(task))
    return AgentContext(**common)


async def agent_turn(agent: Any, ctx: AgentContext, sandbox: Sandbox) -> AgentResult:
    """The agent's turn (``agent_turn.run_agent``). A sandbox that died under it is the
    agent's failure when the backend's evidence says the agent ended it."""
    try:
        return await run_agent(agent, ctx)
    except errors.SandboxError as exc:
        cause = await sandbox.death_cause()
        if cause is None:
            raise
        raise errors.AgentFailure("killed_own_sandbox", f"{cause} ({exc})") from exc


async def grade(graders: list[Grader], evidence: Evidence) -> list[Verdict]:
    verdicts = []
    for grader in graders:
        try:
            verdicts.append(await grader.grade(evidence))
        except errors.InfraError:
            raise
        except errors.GraderError:
            raise
        except Exception as exc:
            raise errors.GraderError(
                f"grader '{grader.type_name}' crashed: {traceback_text(exc)}"
            ) from exc
    return verdicts
