"""The simulated agent's failure modes: what each mutant changes, and when it applies."""

from __future__ import annotations

import anyio
import pytest
from graders_support import all_tasks, run_trial

from harness.agents.base import AgentContext, AgentResult
from harness.agents.mutants import (
    MUTANTS,
    NotApplicable,
    _order_plan,
    _skip_plan,
    _wrong_value_plan,
    altered_answer,
    applicable_mutants,
)
from harness.config.models import Task

BY_ID = {t.task.id: t for folder in ("retail", "shell", "qa") for t in all_tasks(folder)}


def tools(actions) -> list[str]:
    return [a.tool for a in actions]


def test_plans_on_a_cancel_task() -> None:
    task = BY_ID["retail/cancel-w1001"].task
    assert tools(task.solution.actions) == [
        "find_user",
        "verify_identity",
        "get_order",
        "cancel_order",
        "refund",
    ]
    # wrong_order: the refund moves before the verification
    assert tools(_order_plan(task)) == [
        "find_user",
        "refund",
        "verify_identity",
        "get_order",
        "cancel_order",
    ]
    # skipped_step: the last required action (refund) is dropped
    _, actions = _skip_plan(task)
    assert tools(actions) == ["find_user", "verify_identity", "get_order", "cancel_order"]
    # wrong_value: the refund amount, too small by one dollar
    _, actions = _wrong_value_plan(task)
    assert actions[-1].args == {"order_id": "W1001", "amount": 53.04}
    assert task.solution.actions[-1].args["amount"] == 54.04, "the task is not modified"
    assert "$55.04" in altered_answer(task) and "W1001" in altered_answer(task)


def test_applicability() -> None:
    assert "wrong_order" in applicable_mutants(BY_ID["retail/refund-damaged-w1003"].task)
    assert "wrong_order" not in applicable_mutants(BY_ID["retail/address-w1014"].task)
    refusal = applicable_mutants(BY_ID["retail/refuse-cancel-delivered-w1003"].task)
    assert "claim_without_action" not in refusal  # no change is the right outcome
    assert applicable_mutants(BY_ID["qa/arith-sum"].task) == ["wrong_answer", "no_answer"]
    bare = Task(id="t", instruction="x", graders=[{"type": "required_outputs", "outputs": [1]}])
    assert applicable_mutants(bare) == []
    with pytest.raises(NotApplicable):
        _order_plan(BY_ID["qa/arith-sum"].task)


async def _noop(ctx: AgentContext) -> AgentResult:
    return AgentResult(answer=None)


@pytest.mark.parametrize(
    ("task_id", "state_passes"),
    [("retail/refuse-cancel-delivered-w1003", True), ("retail/cancel-w1001", False)],
)
def test_do_nothing_agent_on_real_tasks(task_id: str, state_passes: bool) -> None:
    """On a task whose correct outcome is "no change" the do-nothing agent passes the state
    grader (agent-evaluation guide); the required refusal is what keeps it from passing the task."""
    outcome = anyio.run(run_trial, BY_ID[task_id], _noop)
    by_type = {v.grader: v for v in outcome.verdicts}
    assert by_type["state_diff"].passed is state_passes
    assert not outcome.passed


def test_registry() -> None:
    assert set(MUTANTS) == {
        "claim_without_action",
        "side_effect",
        "wrong_value",
        "wrong_order",
        "skipped_step",
        "wrong_answer",
        "no_answer",
    }
