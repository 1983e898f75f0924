"""Unit tests of each grader's evidence: every difference names its path and both values."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from graders import build_grader
from graders._paths import apply_patch, is_ignored, matches
from graders.base import Evidence
from graders.required_outputs import numbers_in
from graders.tests_script import parse_results, truncate
from harness.config.models import EnvironmentSpec, GraderSpec, Task
from harness.errors import GraderError
from harness.sandbox.base import Environment, SandboxRequest
from harness.sandbox.local import LocalProvider

TASK = Task(id="unit/x", instruction="x", graders=[{"type": "x"}])


def run(spec: dict, **evidence):
    grader = build_grader(GraderSpec.model_validate(spec))
    return anyio.run(grader.grade, Evidence(task=TASK, **evidence))


# ----------------------------------------------------------------------------- paths
@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("orders.*.updated_at", ("orders", "W1", "updated_at"), True),
        ("orders.*.updated_at", ("orders", "W1", "status"), False),
        ("orders.W1*.status", ("orders", "W10", "status"), True),
        ("**.updated_at", ("a", "b", "c", "updated_at"), True),
        ("files.etc/app.conf.mode", ("files", "etc/app.conf", "mode"), True),
        ("files.*__pycache__*", ("files", "app/__pycache__/x.pyc"), True),
        ("files.etc/*.sha256", ("files", "etc/app.conf", "sha256"), True),
    ],
)
def test_patterns(pattern: str, path: tuple, hit: bool) -> None:
    assert matches(pattern, path) is hit


def test_ignore_covers_descendants_and_patch_semantics() -> None:
    assert is_ignored(("orders", "W1", "x", "y"), ["orders.W1"])
    assert not is_ignored(("orders", "W2"), ["orders.W1"])
    s0 = {"t": {"a": {"x": 1, "y": 2}, "b": {"x": 3}}}
    assert apply_patch(s0, {"t": {"a": {"x": 9}, "b": None, "c": {"x": 0}}}) == {
        "t": {"a": {"x": 9, "y": 2}, "c": {"x": 0}}
    }
    assert s0["t"]["a"]["x"] == 1, "the initial state is not modified"


# ----------------------------------------------------------------------------- state_diff
S0 = {"orders": {"W1": {"status": "pending", "n": 1}, "W2": {"status": "pending", "n": 2}}}


def test_state_diff_created_and_deleted_records() -> None:
    patch = {"orders": {"W3": {"status": "new", "n": 3}, "W2": None}}
    good = {"orders": {"W1": S0["orders"]["W1"], "W3": {"status": "new", "n": 3}}}
    assert run(
        {"type": "state_diff", "expected_patch": patch}, initial_state=S0, final_state=good
    ).passed
    v = run({"type": "state_diff", "expected_patch": patch}, initial_state=S0, final_state=S0)
    assert not v.passed
    missing = {m["path"]: m for m in v.details["missing_changes"]}
    assert missing["orders.W3"] == {
        "path": "orders.W3",
        "expected": {"status": "new", "n": 3},
        "actual": None,
    }
    assert missing["orders.W2"]["expected"] is None
    assert missing["orders.W2"]["actual"] == {"status": "pending", "n": 2}
    assert all(r.startswith("missing change at orders.W") for r in v.reasons)


def test_state_diff_unexpected_record_and_bool_vs_int() -> None:
    final = {"orders": {**S0["orders"], "W9": {"status": "x"}}}
    v = run({"type": "state_diff", "expect_no_change": True}, initial_state=S0, final_state=final)
    assert v.details["side_effects"] == [
        {"path": "orders.W9", "before": None, "after": {"status": "x"}}
    ]
    a = {"t": {"k": {"flag": 1}}}
    b = {"t": {"k": {"flag": True}}}
    assert not run(
        {"type": "state_diff", "expect_no_change": True}, initial_state=a, final_state=b
    ).passed
    c = {"t": {"k": {"flag": 1.0}}}
    assert run(
        {"type": "state_diff", "expect_no_change": True}, initial_state=a, final_state=c
    ).passed


def test_state_diff_ignore_from_params_and_environment() -> None:
    final = {"orders": {"W1": {"status": "pending", "n": 5}, "W2": {"status": "done", "n": 2}}}
    spec = {"type": "state_diff", "expect_no_change": True, "ignore": ["orders.*.n"]}
    v = run(spec, initial_state=S0, final_state=final)
    assert [s["path"] for s in v.details["side_effects"]] == ["orders.W2.status"]
    v = run(spec, initial_state=S0, final_state=final, state_ignore=["orders.W2"])
    assert v.passed


def test_state_diff_file_content_sugar() -> None:
    def entry(text: str, mode: str = "0o644") -> dict:
        return {"type": "file", "sha256": hashlib.sha256(text.encode()).hexdigest(), "mode": mode}

    s0 = {"files": {"etc": {"type": "dir", "mode": "0o755"}, "etc/a.conf": entry("port=1\n")}}
    s1 = {"files": {**s0["files"], "etc/a.conf": entry("port=2\n")}}
    spec = {
        "type": "state_diff",
        "expected_patch": {"files": {"etc/a.conf": {"content": "port=2\n"}}},
    }
    assert run(spec, initial_state=s0, final_state=s1).passed
    spec["expected_patch"]["files"]["etc/a.conf"]["content"] = "port=3\n"
    v = run(spec, initial_state=s0, final_state=s1)
    (w,) = v.details["wrong_values"]
    assert w["path"] == "files.etc/a.conf.sha256"
    assert w["expected"] == hashlib.sha256(b"port=3\n").hexdigest()
    assert w["actual"] == s1["files"]["etc/a.conf"]["sha256"]
    assert w["before"] == s0["files"]["etc/a.conf"]["sha256"]


def test_state_diff_needs_state_and_explicit_goal() -> None:
    with pytest.raises(GraderError, match="initial state is missing"):
        run({"type": "state_diff", "expect_no_change": True}, final_state={})
    with pytest.raises(ValidationError, match="expect_no_change"):
        build_grader(GraderSpec.model_validate({"type": "state_diff"}))
    with pytest.raises(ValidationError, match="not both"):
        build_grader(
            GraderSpec.model_validate(
                {"type": "state_diff", "expect_no_change": True, "expected_patch": {"a": 1}}
            )
        )
    with pytest.raises(ValidationError):
        build_grader(
            GraderSpec.model_validate({"type": "state_diff", "expect_no_change": True, "igore": []})
        )


def test_state_diff_reasons_are_capped() -> None:
    s0 = {"t": {str(i): 0 for i in range(30)}}
    s1 = {"t": {str(i): 1 for i in range(30)}}
    v = run({"type": "state_diff", "expect_no_change": True}, initial_state=s0, final_state=s1)
    assert len(v.reasons) == 21 and v.reasons[-1] == "... and 10 more differences"
    assert len(v.details["side_effects"]) == 30


# ----------------------------------------------------------------------------- required_outputs
def test_numbers_in_text_are_read_tolerant_of_formatting() -> None:
    assert numbers_in("Refunded $54.04 (USD 1,234.5) for W1001 and item I301, -3.") == [
        54.04,
        1234.5,
        -3.0,
    ]


@pytest.mark.parametrize(
    ("output", "text", "found"),
    [
        (54.04, "I refunded $54.04.", True),
        (54.04, "I refunded 54.040 dollars", True),
        (54.04, "I refunded $45.04", False),
        (1234.5, "a total of 1,234.50", True),
        ("$1,234.50", "a total of 1234.5", True),
        (50, "your balance is $50.00", True),
        (1001, "order W1001", False),
        ("Cancelled", "Your order is   cancelled now", True),
        ({"any_of": ["can't", "cannot"]}, "I cannot do that", True),
        ({"any_of": ["can't", "cannot"]}, "Done!", False),
        ({"regex": r"refund(ed)? \$?\d+"}, "Refunded $12 today", True),
    ],
)
def test_required_outputs_matching(output, text: str, found: bool) -> None:
    v = run({"type": "required_outputs", "outputs": [output]}, messages=[text])
    assert v.passed is found


def test_required_outputs_evidence_and_answer() -> None:
    spec = {"type": "required_outputs", "outputs": [54.04, "cancelled"]}
    v = run(spec, messages=["Order W1 is cancelled."], answer="Refund: 54.04")
    assert v.passed and v.score == 1.0
    v = run(spec, messages=["Order W1 is cancelled."])
    assert not v.passed and v.score == 0.5
    assert v.details["missing"] == [54.04] and v.details["found"] == ["cancelled"]
    assert v.reasons == ["required output 54.04 not found in the agent's messages"]
    v = run(spec)
    assert "the agent told the user nothing" in v.reasons
    with pytest.raises(ValidationError):
        build_grader(GraderSpec.model_validate({"type": "required_outputs", "outputs": [{"x": 1}]}))


# ----------------------------------------------------------------------------- tests_script
def test_parse_lines_and_pytest_formats() -> None:
    out = "\n".join(
        [
            "PASS test_a",
            "FAIL: test_b",
            "tests/test_x.py::test_c PASSED [ 50%]",
            "FAILED tests/test_x.py::test_d - AssertionError: boom",
            "ERROR tests/test_x.py::test_e",
            "PASSED tests/test_x.py::test_e",
            "random noise",
        ]
    )
    assert parse_results(out) == {
        "test_a": "PASS",
        "test_b": "FAIL",
        "tests/test_x.py::test_c": "PASS",
        "tests/test_x.py::test_d": "FAIL",
        "tests/test_x.py::test_e": "ERROR",
    }
    assert parse_results("PASSED a::b", "lines") == {}
    text = "x" * 10_000
    cut = truncate(text, 1000)
    assert len(cut) < 1100 and "characters cut" in cut


async def _with_sandbox(script: str, spec: dict):
    root = Path(__file__).parent
    env = Environment(spec=EnvironmentSpec(name="unit"), root=root)
    sandbox = await LocalProvider().create(SandboxRequest(environment=env, image_id=None))
    try:
        await sandbox.write_file("hidden/test.sh", script.encode())
        grader = build_grader(GraderSpec.model_validate(spec))
        return await grader.grade(Evidence(task=TASK, sandbox=sandbox, hidden_dir="hidden"))
    finally:
        await sandbox.destroy()


def test_tests_script_fail_to_pass_and_pass_to_pass() -> None:
    script = (
        'N="$HARNESS_RESULT_NONCE"; echo "$N PASS t_fixed"; echo "$N FAIL t_old"; '
        'echo "PASS t_missing"; echo "dir=$HIDDEN_DIR"; exit 1\n'
    )
    spec = {
        "type": "tests_script",
        "fail_to_pass": ["t_fixed", "t_missing"],
        "pass_to_pass": ["t_old"],
    }
    v = anyio.run(_with_sandbox, script, spec)
    assert not v.passed
    assert v.score == pytest.approx(1 / 3)
    assert {t["name"]: t["status"] for t in v.details["tests"]} == {
        "t_fixed": "PASS",
        "t_missing": "NOT_RUN",
        "t_old": "FAIL",
    }
    assert "fail_to_pass test 't_missing' did not run" in v.reasons
    assert "pass_to_pass test 't_old' FAIL" in v.reasons
    assert "dir=hidden" in v.details["output"] and v.details["exit_code"] == 1
    ok = anyio.run(_with_sandbox, script, {**spec, "fail_to_pass": ["t_fixed"], "pass_to_pass": []})
    assert ok.passed and ok.score == 1.0


def test_tests_script_without_lists_uses_exit_code() -> None:
    v = anyio.run(_with_sandbox, "exit 3\n", {"type": "tests_script"})
    assert not v.passed and v.reasons == ["test script exited with code 3"]
    assert anyio.run(_with_sandbox, "true\n", {"type": "tests_script"}).passed


def test_tests_script_needs_sandbox_and_hidden_dir() -> None:
    with pytest.raises(GraderError, match="sandbox"):
        run({"type": "tests_script"})
