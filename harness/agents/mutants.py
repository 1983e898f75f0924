"""Failure modes of the simulated agent: the reference solution, broken on purpose.

Each mutant is ``async def mutant(ctx: ReferenceContext) -> AgentResult``. It reads the task's
reference solution (``task.solution``: shell ``commands`` first, then tool ``actions``, then
the ``answer``) and acts through ``ctx.run_command`` / ``ctx.call_tool`` exactly as the
oracle would, except for one deliberate mistake:

``claim_without_action``  returns the solution's answer but runs nothing.
``side_effect``           runs the solution plus one extra state-changing step: the task's
                          ``simulated.side_effect`` (``{tool, args}`` or ``{command}``), or for
                          file-system environments a stray file under the first state root.
``wrong_value``           runs the solution with one argument altered: the task's
                          ``simulated.wrong_value`` (``{action: i, arg: name, value: v}`` or
                          ``{commands: [...]}`` replacing the commands); otherwise the last
                          state-changing action, preferring a numeric argument (+1), then a
                          non-id string, then an id (its last digit incremented, so it names
                          another record); amounts above 1 go down by 1 (a refund that the
                          store accepts, but too small), other numbers up by 1.
``wrong_order``           moves the first action matching the ``after`` side of a trajectory
                          order pair to just before the first action matching its ``before``.
``skipped_step``          drops the solution actions matching the last required trajectory
                          action, else the last state-changing action, else the last command
                          (``simulated.skipped_step: {action: i}`` or ``{command: i}`` overrides).
``wrong_answer``          runs the solution and answers ``simulated.wrong_answer``, else the
                          answer with every number changed, else "I don't know."
``no_answer``             runs the solution and says nothing.

A mutant is *applicable* to a task when it can be built and the task has a grader able to
catch it (``applicable_mutants``); ``harness validate`` runs every applicable mutant against
every task and expects each to fail. Calling an inapplicable mutant raises ``NotApplicable``.

Tools whose names start with one of ``READ_ONLY_PREFIXES`` are taken to be read-only.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

from pydantic import Field

from harness.agents.base import Agent, AgentResult, ReferenceContext
from harness.config.models import Options, Solution, Task, ToolCall

READ_ONLY_PREFIXES = (
    "get_",
    "find_",
    "list_",
    "search_",
    "read_",
    "lookup",
    "verify_",
    "check_",
    "think",
    "calculate",
    "transfer_to_human",
)
ANSWER_GRADERS = ("answer_match", "required_outputs")

Mutant = Callable[[ReferenceContext], Awaitable[AgentResult]]


class NotApplicable(Exception):
    """The mutant cannot be built for this task (or no grader of the task could catch it)."""


# ----------------------------------------------------------------------------- helpers
def _params(task: Task, type_name: str) -> list[Any]:
    """Validated parameter models of the task's graders of one type."""
    from graders import grader_class

    out = []
    for spec in task.graders:
        if spec.type == type_name:
            out.append(grader_class(type_name).Params.model_validate(spec.model_dump()))
    return out


def _solution(task: Task) -> Solution:
    if task.solution is None:
        raise NotApplicable(f"task {task.id} has no reference solution")
    return task.solution


def is_read_only(tool: str) -> bool:
    return tool.startswith(READ_ONLY_PREFIXES)


async def perform(ctx: ReferenceContext, commands: list[str], actions: list[ToolCall]) -> None:
    """Run shell commands, then tool calls, as the oracle does."""
    for command in commands:
        await ctx.run_command(command)
    for action in actions:
        await ctx.call_tool(action.tool, copy.deepcopy(action.args))


def _changes_state(task: Task) -> bool:
    """Does some outcome grader expect a change (a non-empty patch or fail-to-pass tests)?"""
    patches = [p for p in _params(task, "state_diff") if p.expected_patch and not p.goal_only]
    tests = [p for p in _params(task, "tests_script") if p.fail_to_pass or not p.pass_to_pass]
    return bool(patches or tests)


def _full_state_grader(task: Task) -> bool:
    return any(not p.goal_only for p in _params(task, "state_diff"))


def _required_rules(task: Task) -> list[Any]:
    return [r for p in _params(task, "trajectory") for r in p.required]


def _has_answer_grader(task: Task) -> bool:
    return any(spec.type in ANSWER_GRADERS for spec in task.graders)


_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")


def _bump(match: re.Match[str]) -> str:
    raw = match.group(0)
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    value = float(raw.replace(",", "")) + 1
    return f"{value:.{decimals}f}"


def altered_answer(task: Task) -> str:
    declared = task.simulated.get("wrong_answer")
    if declared is not None:
        return str(declared)
    answer = _solution(task).answer or ""
    if _NUMBER.search(answer):
        return _NUMBER.sub(_bump, answer)
    return "I don't know."


def _alter(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return round(value - 1.0, 2) if value > 1 else round(value + 1.0, 2)
    if isinstance(value, str):
        if value and value[-1].isdigit():
            return value[:-1] + str((int(value[-1]) + 1) % 10)
        return value + " X"
    if isinstance(value, list) and value:
        return [_alter(value[0]), *value[1:]]
    return "altered"


def _pick_arg(args: dict[str, object]) -> str | None:
    """Prefer a number, then a string that is not an identifier, then anything."""
    names = list(args)
    for name in names:
        if isinstance(args[name], int | float) and not isinstance(args[name], bool):
            return name
    for name in names:
        if isinstance(args[name], str) and not name.endswith("id") and name != "reason":
            return name
    for name in reversed(names):
        if name != "reason":
            return name
    return None


def _wrong_value_plan(task: Task) -> tuple[list[str], list[ToolCall]]:
    sol = _solution(task)
    commands, actions = list(sol.commands), [a.model_copy(deep=True) for a in sol.actions]
    declared = task.simulated.get("wrong_value")
    if declared:
        if "commands" in declared:
            return list(declared["commands"]), actions
        i, arg = int(declared["action"]), declared["arg"]
        actions[i].args[arg] = declared["value"]
        return commands, actions
    for action in reversed(actions):
        if is_read_only(action.tool):
            continue
        name = _pick_arg(action.args)
        if name is not None:
            action.args[name] = _alter(action.args[name])
            return commands, actions
    raise NotApplicable("no state-changing action with an argument to alter")


class SideEffect(TypedDict, total=False):
    """One stray state-changing step: a shell ``command``, or a ``tool`` call with ``args``
    (the task's ``simulated.side_effect``)."""

    command: str
    tool: str
    args: dict[str, object]


def _side_effect(ctx: ReferenceContext) -> SideEffect:
    declared = ctx.task.simulated.get("side_effect")
    if declared:
        effect: SideEffect = {**declared}
        return effect
    env = ctx.environment
    if env and env.spec.state.kind == "files" and env.spec.state.paths:
        root = env.spec.state.paths[0]
        return {"command": f"mkdir -p {root} && echo stray > {root}/.harness_side_effect"}
    raise NotApplicable("no side effect declared (simulated.side_effect) for this task")


def _order_plan(task: Task) -> list[ToolCall]:
    actions = list(_solution(task).actions)
    for params in _params(task, "trajectory"):
        rules = {r.key: r for r in params.required}
        for pair in params.order:
            a_rule, b_rule = rules[pair.before], rules[pair.after]
            ia = next((i for i, x in enumerate(actions) if a_rule.matches(x.tool, x.args)), None)
            ib = next((i for i, x in enumerate(actions) if b_rule.matches(x.tool, x.args)), None)
            if ia is not None and ib is not None and ia < ib:
                moved = actions.pop(ib)
                actions.insert(ia, moved)
                return actions
    raise NotApplicable("no trajectory order pair that the solution's actions satisfy")


def _skip_plan(task: Task) -> tuple[list[str], list[ToolCall]]:
    sol = _solution(task)
    commands, actions = list(sol.commands), list(sol.actions)
    declared = task.simulated.get("skipped_step")
    if declared:
        if "command" in declared:
            del commands[int(declared["command"])]
        else:
            del actions[int(declared["action"])]
        return commands, actions
    for rule in reversed(_required_rules(task)):
        kept = [a for a in actions if not rule.matches(a.tool, a.args)]
        if len(kept) < len(actions):
            return commands, kept
    if _changes_state(task):
        for i in range(len(actions) - 1, -1, -1):
            if not is_read_only(actions[i].tool):
                return commands, actions[:i] + actions[i + 1 :]
        if commands:
            return commands[:-1], actions
    raise NotApplicable("no step whose omission a grader of this task would notice")


# ----------------------------------------------------------------------------- mutants
async def claim_without_action(ctx: ReferenceContext) -> AgentResult:
    sol = _solution(ctx.task)
    return AgentResult(answer=sol.answer or "Done: I have completed your request.")


async def side_effect(ctx: ReferenceContext) -> AgentResult:
    sol = _solution(ctx.task)
    extra = _side_effect(ctx)
    # The stray action goes before a tool that ends the episode, or it would never run.
    ending = {t.name for t in ctx.tools if t.terminates}
    cut = next((i for i, a in enumerate(sol.actions) if a.tool in ending), len(sol.actions))
    await perform(ctx, sol.commands, sol.actions[:cut])
    if "command" in extra:
        await ctx.run_command(extra["command"])
    else:
        await ctx.call_tool(extra["tool"], dict(extra.get("args", {})))
    await perform(ctx, [], sol.actions[cut:])
    return AgentResult(answer=sol.answer)


async def wrong_value(ctx: ReferenceContext) -> AgentResult:
    commands, actions = _wrong_value_plan(ctx.task)
    await perform(ctx, commands, actions)
    return AgentResult(answer=_solution(ctx.task).answer)


async def wrong_order(ctx: ReferenceContext) -> AgentResult:
    actions = _order_plan(ctx.task)
    await perform(ctx, _solution(ctx.task).commands, actions)
    return AgentResult(answer=_solution(ctx.task).answer)


async def skipped_step(ctx: ReferenceContext) -> AgentResult:
    commands, actions = _skip_plan(ctx.task)
    await perform(ctx, commands, actions)
    return AgentResult(answer=_solution(ctx.task).answer)


async def wrong_answer(ctx: ReferenceContext) -> AgentResult:
    sol = _solution(ctx.task)
    await perform(ctx, sol.commands, sol.actions)
    return AgentResult(answer=altered_answer(ctx.task))


async def no_answer(ctx: ReferenceContext) -> AgentResult:
    sol = _solution(ctx.task)
    await perform(ctx, sol.commands, sol.actions)
    return AgentResult(answer=None)


MUTANTS: dict[str, Mutant] = {
    "claim_without_action": claim_without_action,
    "side_effect": side_effect,
    "wrong_value": wrong_value,
    "wrong_order": wrong_order,
    "skipped_step": skipped_step,
    "wrong_answer": wrong_answer,
    "no_answer": no_answer,
}


def _applicable(name: str, task: Task) -> bool:
    sol = task.solution
    if sol is None:
        return False
    try:
        if name == "claim_without_action":
            acts = bool(sol.actions or sol.commands)
            return acts and (_changes_state(task) or bool(_required_rules(task)))
        if name == "side_effect":
            if not _full_state_grader(task):
                return False
            declared = task.simulated.get("side_effect")
            return bool(declared) or _is_files_task(task)
        if name == "wrong_value":
            if not _changes_state(task):
                return False
            _wrong_value_plan(task)
            return True
        if name == "wrong_order":
            _order_plan(task)
            return True
        if name == "skipped_step":
            _skip_plan(task)
            return True
        if name in ("wrong_answer", "no_answer"):
            return _has_answer_grader(task) and sol.answer is not None
    except NotApplicable:
        return False
    return False


def _is_files_task(task: Task) -> bool:
    """Whether the task's state is a file system: decided from its graders' patches, since
    the task alone does not carry its environment's spec."""
    return bool(task.simulated.get("files_state")) or any(
        "files" in p.expected_patch for p in _params(task, "state_diff")
    )


def applicable_mutants(task: Task) -> list[str]:
    """Names of the mutants that can be built for ``task`` and that some grader of the task
    is able to catch, in ``MUTANTS`` order."""
    return [name for name in MUTANTS if _applicable(name, task)]


__all__ = ["MUTANTS", "NotApplicable", "altered_answer", "applicable_mutants", "perform"]


class MutantParams(Options):
    mutant: str = Field(description="the failure mode to act out (see MUTANTS)")


class MutantAgent(Agent):
    """Acts out one named failure mode (``params: {mutant: NAME}``) of the reference
    solution: a built-in reference agent (it reads the task's solution)."""

    name = "mutant"
    reference_solution = True
    Params = MutantParams

    async def run(self, ctx: ReferenceContext) -> AgentResult:  # type: ignore[override]
        return await MUTANTS[self.params_as(ctx, MutantParams).mutant](ctx)
