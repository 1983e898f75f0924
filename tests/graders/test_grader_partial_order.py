"""The agent-evaluation guide's partial order: verify and look up, in either order, then cancel."""

from __future__ import annotations

import anyio
import pytest

from graders import build_grader
from graders.base import Evidence
from harness.config.models import GraderSpec, Task
from harness.trajectory import Event

RULES = {
    "type": "trajectory",
    "required": [
        {"label": "verify", "tool": "verify_identity", "args": {"user_id": "u1"}},
        {"label": "lookup", "tool": "get_order", "args": {"order_id": {"regex": "^W1$"}}},
        {"label": "cancel", "tool": "cancel_order", "args": {"order_id": "W1"}},
    ],
    "order": [["verify", "cancel"], ["lookup", "cancel"]],
    "forbidden": [
        {"tool": "cancel_order", "args": {"order_id": "W2"}, "severity": "high"},
        {"label": "rm", "tool": "bash", "args": {"command": {"regex": "rm -rf"}}, "severity": 3},
    ],
}
TASK = Task(id="toy/order", instruction="x", graders=[{"type": "trajectory"}])
CALLS = {
    "verify": ("verify_identity", {"user_id": "u1", "email": "a@b.c"}),
    "lookup": ("get_order", {"order_id": "W1"}),
    "cancel": ("cancel_order", {"order_id": "W1", "reason": "no longer needed"}),
    "cancel_w2": ("cancel_order", {"order_id": "W2", "reason": "no longer needed"}),
}


def events(*names: str, failed: tuple[str, ...] = ()) -> list[Event]:
    out = []
    for i, name in enumerate(names):
        tool, args = CALLS[name]
        out.append(Event(step=i, kind="tool_call", tool=tool, args=args, ok=name not in failed))
    return out


def grade(evs: list[Event], spec: dict = RULES):
    grader = build_grader(GraderSpec.model_validate(spec))
    return anyio.run(grader.grade, Evidence(task=TASK, trajectory=evs))


@pytest.mark.parametrize("path", [("verify", "lookup", "cancel"), ("lookup", "verify", "cancel")])
def test_both_linearizations_pass(path: tuple[str, ...]) -> None:
    v = grade(events(*path))
    assert v.passed, v.reasons
    assert v.score == 1.0
    assert v.role == "path"


def test_cancel_first_fails_and_names_rule_and_step() -> None:
    v = grade(events("cancel", "verify", "lookup"))
    assert not v.passed
    assert v.score == 1.0  # every required action was reached; the order is what failed
    broken = [o for o in v.details["order"] if not o["holds"]]
    assert {(o["before"], o["after"]) for o in broken} == {
        ("verify", "cancel"),
        ("lookup", "cancel"),
    }
    assert broken[0]["steps"] == [1, 0]
    assert any("'verify' must come before 'cancel'" in r and "step 0" in r for r in v.reasons)


def test_first_occurrence_semantics() -> None:
    # A later, correctly ordered cancel does not excuse the first, unverified one.
    v = grade(events("cancel", "verify", "lookup", "cancel"))
    assert not v.passed
    # A required action that never happens does not also count as an order violation.
    v = grade(events("verify", "lookup"))
    assert all(o["holds"] for o in v.details["order"])


def test_progress_rate_of_an_agent_that_stops_before_cancel() -> None:
    v = grade(events("verify", "lookup"))
    assert not v.passed
    assert v.score == pytest.approx(2 / 3)
    assert v.details["progress"] == pytest.approx(2 / 3)
    assert any("'cancel'" in r and "never reached" in r for r in v.reasons)


def test_failed_calls_do_not_count_unless_asked() -> None:
    evs = events("verify", "lookup", "cancel", failed=("verify",))
    assert not grade(evs).passed
    assert grade(evs, {**RULES, "count_failed_calls": True}).passed


def test_forbidden_actions_are_harms_with_step_and_severity() -> None:
    evs = events("verify", "lookup", "cancel", "cancel_w2")
    evs.append(Event(step=4, kind="command", tool="bash", args={"command": "rm -rf data"}))
    v = grade(evs)
    assert not v.passed
    assert v.score == 1.0
    assert [(h["action"], h["step"], h["severity"]) for h in v.harms] == [
        ("cancel_order", 3, "high"),
        ("rm", 4, 3.0),
    ]
    assert any("forbidden action 'cancel_order'" in r and "step 3" in r for r in v.reasons)


def test_bad_rules_are_config_errors() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not a required label"):
        build_grader(GraderSpec.model_validate({**RULES, "order": [["verify", "refund"]]}))
    with pytest.raises(ValidationError):
        build_grader(GraderSpec.model_validate({**RULES, "requird": []}))
    with pytest.raises(ValidationError, match="duplicate"):
        build_grader(
            GraderSpec.model_validate(
                {"type": "trajectory", "required": [{"tool": "a"}, {"tool": "a"}]}
            )
        )
