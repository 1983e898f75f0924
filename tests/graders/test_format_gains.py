"""The task-format features tau-bench needs, for every environment: strict state equality,
plain-substring required outputs, tools that end the episode, a user with a private goal."""

from __future__ import annotations

import anyio
import pytest
from pydantic import ValidationError

from graders import build_grader
from graders.base import Evidence
from harness.agents.base import AgentContext
from harness.agents.user import make_user
from harness.config.models import (
    Arm,
    Budgets,
    Environment,
    EnvironmentSpec,
    GraderSpec,
    Task,
    UserScript,
)
from harness.errors import EpisodeEnded
from harness.sandbox.base import SandboxRequest
from harness.sandbox.local import LocalProvider

TASK = Task(
    id="t", instruction="go", graders=[GraderSpec(type="state_diff", expect_no_change=True)]
)


def _grade(spec: dict, **evidence) -> bool:
    grader = build_grader(GraderSpec(**spec))
    return anyio.run(grader.grade, Evidence(task=TASK, **evidence)).passed


@pytest.mark.parametrize(
    ("final", "loose", "strict"),
    [
        ({"o": {"W1": {"paid": 250}}}, True, True),
        ({"o": {"W1": {"paid": 250.0}}}, True, False),  # tau-bench: str(250.0) != str(250)
        ({"o": {"W1": {"paid": 250, "note": None}}}, True, False),  # null is not absent
        ({"o": {"W1": {"paid": [250.0]}}}, False, False),
    ],
)
def test_strict_types(final: dict, loose: bool, strict: bool) -> None:
    s0 = {"o": {"W1": {"paid": 0}}, "p": {"x": {"big": list(range(50))}}}
    final = {**final, "p": {"x": {"big": list(range(50))}}}
    spec = {"type": "state_diff", "expected_patch": {"o": {"W1": {"paid": 250}}}}
    assert _grade(spec, initial_state=s0, final_state=final) is loose
    assert _grade({**spec, "strict_types": True}, initial_state=s0, final_state=final) is strict


def test_strict_types_catches_a_type_only_side_effect() -> None:
    s0 = {"o": {"W1": {"paid": 0}, "W2": {"paid": 5}}}
    s1 = {"o": {"W1": {"paid": 0}, "W2": {"paid": 5.0}}}
    spec = {"type": "state_diff", "expect_no_change": True, "strict_types": True}
    grader = build_grader(GraderSpec(**spec))
    verdict = anyio.run(grader.grade, Evidence(task=TASK, initial_state=s0, final_state=s1))
    assert not verdict.passed and "o.W2.paid" in verdict.reasons[0]


@pytest.mark.parametrize(
    ("messages", "passed"),
    [
        (["Your refund of $1,093.34 is on its way"], True),  # commas removed from the message
        (["REFUND: 1093.34"], True),  # case-insensitive
        (["Refund of 1093", ".34"], False),  # one message must hold it
        (["Refund of 1093.3"], False),
        (["refund 1 093.34"], False),  # no whitespace collapsing, no numeric reading
    ],
)
def test_substring_mode(messages: list[str], passed: bool) -> None:
    spec = {"type": "required_outputs", "match": "substring", "outputs": ["1093.34"]}
    assert _grade(spec, messages=messages) is passed


def test_substring_mode_refuses_any_of() -> None:
    with pytest.raises(ValueError, match="substring takes plain strings"):
        build_grader(
            GraderSpec(type="required_outputs", match="substring", outputs=[{"any_of": ["a"]}])
        )


def test_terminating_tool_ends_the_episode(tmp_path) -> None:
    spec = EnvironmentSpec.model_validate(
        {
            "name": "t",
            "tools": [
                {"name": "note", "description": "d", "command": "cat >> notes.txt"},
                {
                    "name": "hand_over",
                    "description": "d",
                    "command": "echo bye",
                    "terminates": True,
                },
            ],
        }
    )
    env = Environment(spec, tmp_path)

    async def go() -> AgentContext:
        sandbox = await LocalProvider().create(SandboxRequest(environment=env, image_id=None))
        ctx = AgentContext(
            task_id=TASK.id,
            arm=Arm(name="a", agent="noop"),
            instruction="go",
            sandbox=sandbox,
            environment=env,
            seed=0,
            budgets=Budgets(),
        )
        try:
            assert (await ctx.call_tool("note", {"n": 1})).ok
            with pytest.raises(EpisodeEnded):
                await ctx.call_tool("hand_over", {})
            with pytest.raises(EpisodeEnded):  # swallowing it does not let the agent go on
                await ctx.call_tool("note", {"n": 2})
            with pytest.raises(EpisodeEnded):
                ctx.say("one more thing")
            notes = (await sandbox.read_file("notes.txt")).decode()
            assert notes == '{"n": 1}'
        finally:
            await sandbox.destroy()
        return ctx

    ctx = anyio.run(go)
    assert [e.tool for e in ctx.trajectory.events] == ["note", "hand_over"]
    assert ctx.ended_by == "hand_over"


def test_private_goal_needs_an_opening() -> None:
    with pytest.raises(ValidationError, match="instruction is required"):
        Task(id="t", graders=[GraderSpec(type="state_diff", expect_no_change=True)])
    with pytest.raises(ValidationError, match="user.goal needs"):
        Task(
            id="t",
            user=UserScript(goal="secret"),
            graders=[GraderSpec(type="state_diff", expect_no_change=True)],
        )
    task = Task(
        id="t",
        user=UserScript(goal="cancel W1 (secret)", turns=["Hi, I need help with an order."]),
        graders=[GraderSpec(type="state_diff", expect_no_change=True)],
    )
    user = make_user(task.user, instruction=task.instruction, seed=1)
    assert user is not None
    turn = anyio.run(user.opening)
    assert turn.text == "Hi, I need help with an order." and "secret" not in turn.text
