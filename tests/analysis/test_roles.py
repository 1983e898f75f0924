"""One rule names the baseline, the candidate and the A/A copy, for every view."""

from __future__ import annotations

import pytest

from harness.analysis import run_roles, settings_of
from harness.analysis.roles import aa_copy
from harness.config.roles import Roles, decide_roles

SIM = {"agent": "simulated", "params": {"p": 0.5}}


def _suite(arms: list[dict], **extra) -> dict:
    return {"arms": arms, **extra}


def test_gate_pair_wins_over_report_pair_and_order():
    suite = _suite(
        [
            {"name": n, "agent": "simulated", "params": {"p": p}}
            for n, p in zip("abc", (0.1, 0.2, 0.3), strict=True)
        ],
        gate={"primary": {"baseline": "c", "candidate": "b"}},
        report={"primary": {"baseline": "a", "candidate": "b"}},
    )
    assert run_roles(suite, ["a", "b", "c"])[:2] == ("c", "b")
    assert run_roles(suite, ["a", "b", "c"]).source == "gate"
    del suite["gate"]
    assert run_roles(suite, ["a", "b", "c"])[:3] == ("a", "b", None)
    del suite["report"]
    assert run_roles(suite, ["a", "b", "c"]).source == "order"


def test_a_policy_pair_takes_the_place_of_the_suite_gate():
    suite = _suite(
        [{"name": n} for n in "abc"], gate={"primary": {"baseline": "a", "candidate": "b"}}
    )
    assert run_roles(suite, list("abc"), ("c", "a"))[:2] == ("c", "a")


@pytest.mark.parametrize("name", ["base-aa", "base_aa", "base.aa", "BASE-AA"])
def test_every_aa_naming_style_is_the_copy_and_never_the_default_candidate(name):
    arms = ["base", name, "cand"]
    roles = decide_roles(arms)
    assert roles == Roles("base", "cand", name, "order")


def test_an_arm_configured_like_the_baseline_is_its_copy():
    specs = [{"name": "base", **SIM}, {"name": "cand", "agent": "llm"}, {"name": "twin", **SIM}]
    assert run_roles(_suite(specs), ["base", "cand", "twin"]).aa == "twin"
    # ... but two identical arms and nothing else are a comparison, not a baseline and its copy
    specs = [{"name": "x", **SIM}, {"name": "y", **SIM}]
    assert run_roles(_suite(specs), ["x", "y"]) == Roles("x", "y", None, "order")


def test_the_named_copy_wins_over_a_configured_twin():
    specs = [{"name": "b", **SIM}, {"name": "c"}, {"name": "t", **SIM}, {"name": "b-aa", **SIM}]
    assert run_roles(_suite(specs), ["b", "c", "t", "b-aa"]).aa == "b-aa"


def test_the_copy_of_another_side_of_a_comparison():
    specs = [{"name": n} for n in ("a", "b", "b_aa")]
    assert aa_copy(_suite(specs), ["a", "b", "b_aa"], "b") == "b_aa"
    assert aa_copy(_suite(specs), ["a", "b", "b_aa"], "a") is None


def test_the_suite_model_uses_the_same_rule():
    from harness.config.models import Suite

    suite = Suite.model_validate(
        {
            "name": "s",
            "tasks": ["t.yaml"],
            "arms": [{"name": "base", "agent": "noop"}, {"name": "cand", "agent": "oracle"}],
            "aa": True,
            "gate": {"primary": {"baseline": "cand", "candidate": "base"}, "rule": "improvement"},
        }
    )
    assert [a.name for a in suite.arms] == ["base", "cand", "cand-aa"]
    stored = suite.model_dump(mode="json")
    assert suite.primary_arms() == run_roles(stored, [a.name for a in suite.arms])[:2]
    assert run_roles(stored, [a.name for a in suite.arms]).aa == "cand-aa"


def test_settings_carry_cluster_key_denominator_and_phase_one():
    s = settings_of(
        {
            "trials": 2,
            "denominator": "exclude",
            "repeats": {"mode": "adaptive"},
            "report": {"cluster_key": "task", "confidence": 0.9},
        },
        trials_per_task=3,
    )
    assert (s.cluster_key, s.denominator, s.confidence, s.phase_one_trials) == (
        "task",
        "exclude",
        0.9,
        3,
    )
    assert settings_of({}).phase_one_trials is None and s.at(0.8).confidence == 0.8
