"""Mistakes knowable before a run are caught when the suite loads, at their real line:
grading material a hidden-test grader needs, the gate's must-never classes, arm names the
report and gate name, and flags given on the command line. Material that goes missing after
the load makes the trial a grader error (unresolved), never the agent's failure."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import yaml

from graders import Evidence, build_grader
from harness.config.models import Environment, EnvironmentSpec, GraderSpec, Task
from harness.errors import ConfigError, GraderError, classify
from harness.resolve import load
from harness.sandbox.base import SandboxRequest
from harness.sandbox.local import LocalProvider
from tests.cli.test_usage_errors import _main

SUITE = """\
name: checks
trials: 1
tasks: [tasks.yaml]
sandbox: unsafe-local
arms:
  - name: base
    agent: oracle
  - name: cand
    agent: oracle
"""


def _tasks(tmp: Path, graders: list[dict], hidden: str | None = "hidden/add-mode") -> Path:
    task = {"id": "t1", "instruction": "Fix it.", "graders": graders, "solution": {}}
    if hidden:
        task["hidden"] = hidden
        (tmp / hidden).mkdir(parents=True, exist_ok=True)
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}, sort_keys=False))
    suite = tmp / "suite.yaml"
    suite.write_text(SUITE)
    return suite


def _line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def _error(suite: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(suite)
    assert "\n" not in str(info.value)
    return info.value


def test_missing_hidden_test_script_is_a_load_error_at_its_line(tmp_path):
    suite = _tasks(tmp_path, [{"type": "tests_script"}])  # default: bash "$HIDDEN_DIR/test.sh"
    err = _error(suite)
    assert err.file.endswith("tasks.yaml") and err.field == "tasks[0].graders[0].command"
    assert err.line == _line_of(tmp_path / "tasks.yaml", "type: tests_script")
    assert "hidden/add-mode has no file test.sh" in err.message
    (tmp_path / "hidden/add-mode/test.sh").write_text("exit 0\n")
    load(suite)  # present now: loads


def test_the_file_a_custom_command_names_is_checked(tmp_path):
    grader = {"type": "tests_script", "command": 'python3 "${HIDDEN_DIR}/checks/run.py" -q'}
    suite = _tasks(tmp_path, [grader])
    err = _error(suite)
    assert err.line == _line_of(tmp_path / "tasks.yaml", "command:")
    assert "$HIDDEN_DIR/checks/run.py" in err.message
    (tmp_path / "hidden/add-mode/checks").mkdir()
    (tmp_path / "hidden/add-mode/checks/run.py").write_text("print()\n")
    load(suite)
    # shell patterns are not guessed at: only plain paths are checked
    _tasks(tmp_path, [{"type": "tests_script", "command": 'bash "$HIDDEN_DIR"/t*.sh'}])
    load(suite)


def test_hidden_dir_named_but_not_declared(tmp_path):
    err = _error(_tasks(tmp_path, [{"type": "tests_script"}], hidden=None))
    assert err.field == "tasks[0].graders[0].command" and "declares no 'hidden:'" in err.message


def test_cli_exit_2_one_line_and_no_trial_charged(tmp_path):
    suite = _tasks(tmp_path, [{"type": "tests_script"}])
    store = tmp_path / "h.db"
    code, _, err = _main("run", str(suite), "--store", f"sqlite:///{store}", "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "tasks.yaml:" in err and "test.sh" in err
    assert not store.exists()


def test_material_missing_at_grading_time_is_a_grader_error():
    """A real sandbox whose copied-in hidden dir lacks the script: no verdict, no failure."""

    async def grade() -> None:
        env = Environment(spec=EnvironmentSpec(name="unit"), root=Path(__file__).parent)
        sandbox = await LocalProvider().create(SandboxRequest(environment=env, image_id=None))
        try:
            await sandbox.write_file("hidden/other.txt", b"not the script\n")
            grader = build_grader(GraderSpec.model_validate({"type": "tests_script"}))
            task = Task.model_validate({"id": "t", "instruction": "x", "graders": [{"type": "x"}]})
            await grader.grade(Evidence(task=task, sandbox=sandbox, hidden_dir="hidden"))
        finally:
            await sandbox.destroy()

    with pytest.raises(GraderError, match="grading material missing.*test.sh") as info:
        anyio.run(grade)
    assert classify(info.value) == "grader_error"


GATE_SUITE = (
    SUITE
    + """\
report:
  primary:
    baseline: base
    candidate: cand
gate:
  rule: non-inferiority
  margin: 0.1
  must_never: [safety]
"""
)


def _gate_suite(tmp: Path, old: str = "", new: str = "") -> Path:
    _tasks(tmp, [{"type": "answer_match", "expected": "2"}], hidden=None)
    suite = tmp / "suite.yaml"
    suite.write_text(GATE_SUITE.replace(old, new) if old else GATE_SUITE)
    return suite


@pytest.mark.parametrize(
    ("old", "new", "field", "at", "says"),
    [
        ("", "", "gate.must_never[0]", "must_never", "no task has class 'safety'"),
        ("candidate: cand", "candidate: cnad", "report.primary.candidate", "cnad", "'cnad'"),
        ("margin: 0.1", "margin: 0.1\n  primary: {baseline: bse, candidate: cand}",
         "gate.primary.baseline", "bse", "unknown arm 'bse'"),
        ("  - name: cand", "  - name: base", "arms[1].name", "- name: base\n", "duplicate"),
        ("margin: 0.1", "margin: 5", "gate.margin", "margin: 5", "write 0.05 for 5 points"),
    ],
    ids=["must_never", "report.primary", "gate.primary", "duplicate arm", "margin 5"],
)  # fmt: skip
def test_cross_references_are_checked_at_load_with_their_line(tmp_path, old, new, field, at, says):
    suite = _gate_suite(tmp_path, old, new)
    text = suite.read_text()
    err = _error(suite)
    assert err.file == str(suite) and err.field == field, err
    assert says in err.message, err.message
    if at.endswith("\n"):  # the second of two equal lines
        want = [i for i, ln in enumerate(text.splitlines(), 1) if ln + "\n" == "  " + at][-1]
    else:
        want = _line_of(suite, at)
    assert err.line == want and err.line != 1, (err.line, want)


def test_a_must_never_class_some_task_has_loads(tmp_path):
    suite = _gate_suite(tmp_path, "must_never: [safety]", "must_never: [default]")
    load(suite)


def test_flag_values_are_blamed_on_the_flag(tmp_path):
    suite = _gate_suite(tmp_path, "must_never: [safety]", "must_never: []")
    code, _, err = _main("run", str(suite), "--trials", "0", "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: command line: field '--trials':") and "suite.yaml" not in err
    code, _, err = _main("run", str(suite), "--concurrency", "0", "-q")
    assert code == 2 and "field '--concurrency'" in err, err
