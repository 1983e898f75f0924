"""The trial page never calls a failure the agent caused 'not an agent-caused failure'."""

from __future__ import annotations

from types import SimpleNamespace

from harness.viewer.trial_page import failure_kind_fact


def _trial(status: str, failure_kind=None, harm=0.0, harms=None):
    return SimpleNamespace(
        status=status, failure_kind=failure_kind, harm_severity=harm, evidence={"harms": harms}
    )


def test_a_forbidden_action_is_the_agents_failure():
    shown = failure_kind_fact(_trial("failed", harm=3.0, harms=[{"action": "refund"}]))
    assert shown == "— (failed by its graders: a forbidden action)"
    assert "not" not in shown


def test_each_status_says_whose_it_is():
    assert failure_kind_fact(_trial("failed", "timeout")) == "timeout"
    assert failure_kind_fact(_trial("failed")) == "— (failed by its graders)"
    assert failure_kind_fact(_trial("passed")) == "—"
    assert failure_kind_fact(_trial("infra_error")).endswith("not the agent's failure)")
