"""The agent-evaluation guide's toy store: two pending orders, the task "cancel W1 and refund 54.04", four
agents and three graders of increasing strictness. Only the full-state grader passes exactly
the correct agent; on a task whose correct outcome is "no change" the do-nothing agent passes.
"""

from __future__ import annotations

import copy

import anyio
import pytest

from graders import build_grader
from graders.base import Evidence, Verdict
from harness.config.models import GraderSpec, Task

S0 = {
    "orders": {
        "W1": {"user": "u1", "status": "pending", "refund": 0.0, "updated_at": "t0"},
        "W2": {"user": "u2", "status": "pending", "refund": 0.0, "updated_at": "t0"},
    }
}
GOAL = {"orders": {"W1": {"status": "cancelled", "refund": 54.04}}}
TASK = Task(id="toy/cancel-w1", instruction="Cancel W1 and refund 54.04.", graders=[{"type": "x"}])


def _run(state: dict, *changes: tuple[str, str, object]) -> dict:
    s = copy.deepcopy(state)
    for order, field, value in changes:
        s["orders"][order][field] = value
        s["orders"][order]["updated_at"] = "t1"
    return s


# Each agent: (final state, what it told the user).
AGENTS = {
    "correct": (
        _run(S0, ("W1", "status", "cancelled"), ("W1", "refund", 54.04)),
        ["Done: W1 is cancelled and $54.04 refunded."],
    ),
    "do_nothing": (copy.deepcopy(S0), []),
    "liar": (copy.deepcopy(S0), ["Done: W1 is cancelled and $54.04 refunded."]),
    "side_effect": (
        _run(
            S0,
            ("W1", "status", "cancelled"),
            ("W1", "refund", 54.04),
            ("W2", "status", "cancelled"),
        ),
        ["Done: W1 is cancelled and $54.04 refunded."],
    ),
}

GRADERS = {
    "claim": {"type": "required_outputs", "outputs": ["cancelled", 54.04]},
    "goal_fields": {"type": "state_diff", "expected_patch": GOAL, "goal_only": True},
    "full_state": {"type": "state_diff", "expected_patch": GOAL},
}
IGNORE = ["orders.*.updated_at"]


def grade(spec: dict, final: dict, messages: list[str], s0: dict = S0) -> Verdict:
    grader = build_grader(GraderSpec.model_validate(spec))
    evidence = Evidence(
        task=TASK,
        messages=messages,
        initial_state=s0,
        final_state=final,
        state_ignore=IGNORE,
    )
    return anyio.run(grader.grade, evidence)


def test_only_the_full_state_grader_passes_exactly_the_correct_agent() -> None:
    table = {g: {a: grade(spec, *AGENTS[a]).passed for a in AGENTS} for g, spec in GRADERS.items()}
    # The claim reader passes the liar (and the agent with a side effect).
    assert table["claim"] == {
        "correct": True,
        "do_nothing": False,
        "liar": True,
        "side_effect": True,
    }
    # The goal-fields grader passes the agent that also cancelled W2.
    assert table["goal_fields"] == {
        "correct": True,
        "do_nothing": False,
        "liar": False,
        "side_effect": True,
    }
    # Only the full-state grader passes exactly the correct agent.
    assert table["full_state"] == {
        "correct": True,
        "do_nothing": False,
        "liar": False,
        "side_effect": False,
    }


def test_on_a_no_change_task_the_do_nothing_agent_passes() -> None:
    spec = {"type": "state_diff", "expect_no_change": True}
    assert grade(spec, *AGENTS["do_nothing"]).passed
    assert not grade(spec, *AGENTS["correct"]).passed


def test_full_state_grader_evidence_names_paths_and_both_values() -> None:
    spec = GRADERS["full_state"]
    v = grade(spec, *AGENTS["side_effect"])
    assert v.details["side_effects"] == [
        {"path": "orders.W2.status", "before": "pending", "after": "cancelled"}
    ]
    assert any("orders.W2.status" in r and "'pending' -> 'cancelled'" in r for r in v.reasons)
    v = grade(spec, *AGENTS["liar"])
    missing = {m["path"]: m for m in v.details["missing_changes"]}
    assert missing["orders.W1.status"] == {
        "path": "orders.W1.status",
        "expected": "cancelled",
        "actual": "pending",
    }
    assert missing["orders.W1.refund"]["expected"] == 54.04
    wrong = _run(S0, ("W1", "status", "cancelled"), ("W1", "refund", 45.04))
    v = grade(spec, wrong, [])
    assert v.details["wrong_values"] == [
        {"path": "orders.W1.refund", "expected": 54.04, "actual": 45.04, "before": 0.0}
    ]
    assert v.reasons == ["wrong value at orders.W1.refund: expected 54.04, got 45.04 (was 0.0)"]


@pytest.mark.parametrize("agent", list(AGENTS))
def test_timestamps_are_ignored_only_where_declared(agent: str) -> None:
    final, messages = AGENTS[agent]
    spec = {"type": "state_diff", "expected_patch": GOAL}
    grader = build_grader(GraderSpec.model_validate(spec))
    evidence = Evidence(task=TASK, messages=messages, initial_state=S0, final_state=final)
    verdict = anyio.run(grader.grade, evidence)
    if agent in ("correct", "side_effect"):
        # without the environment's ignore list, updated_at is a difference too
        assert not verdict.passed
        assert any(s["path"] == "orders.W1.updated_at" for s in verdict.details["side_effects"])
