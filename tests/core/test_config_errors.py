"""Broken suites and task files give one line naming the file and the field, exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.errors import ConfigError
from harness.executors import bind
from harness.resolve import load
from tests.conftest import write_suite

GOOD_TASK = {
    "id": "t1",
    "instruction": "Say 2.",
    "graders": [{"type": "answer_match", "expected": "2"}],
    "solution": {"answer": "2"},
}


def _suite(tmp: Path, **changes) -> Path:
    return write_suite(tmp, task_list=[GOOD_TASK], **changes)


def _task_file(tmp: Path, content: str) -> Path:
    path = _suite(tmp)
    (tmp / "tasks.yaml").write_text(content)
    return path


def case_bad_yaml(tmp):
    p = _suite(tmp)
    p.write_text("name: x\narms: [\n  - oops\n")
    return p, "suite.yaml", None, "invalid YAML"


def case_unknown_key(tmp):
    return _suite(tmp, trails=3), "suite.yaml", "trails", "unknown key"


def case_wrong_type(tmp):
    return _suite(tmp, trials="five"), "suite.yaml", "trials", "integer"


def case_trials_zero(tmp):
    return _suite(tmp, trials=0), "suite.yaml", "trials", "greater than or equal to 1"


def case_missing_task_file(tmp):
    return _suite(tmp, tasks=["nope.yaml"]), "suite.yaml", "tasks[0]", "file not found"


def case_glob_no_match(tmp):
    return _suite(tmp, tasks=["missing/*.yaml"]), "suite.yaml", "tasks[0]", "glob matched"


def case_unknown_agent(tmp):
    arms = [{"name": "a", "agent": "gpt-wizard"}]
    return _suite(tmp, arms=arms), "suite.yaml", "arms[0].agent", "unknown agent"


def case_duplicate_arm(tmp):
    arms = [{"name": "a", "agent": "noop"}, {"name": "a", "agent": "oracle"}]
    return _suite(tmp, arms=arms), "suite.yaml", None, "duplicate arm"


def case_missing_name(tmp):
    p = _suite(tmp)
    doc = yaml.safe_load(p.read_text())
    del doc["name"]
    p.write_text(yaml.safe_dump(doc))
    return p, "suite.yaml", "name", "required"


def case_bad_sandbox(tmp):
    return _suite(tmp, sandbox="kubernetes"), "suite.yaml", "sandbox", "unknown sandbox"


def case_duplicate_task_id(tmp):
    p = _task_file(tmp, yaml.safe_dump({"tasks": [GOOD_TASK, GOOD_TASK]}))
    return p, "tasks.yaml", "tasks[1].id", "duplicate task id"


def case_task_unknown_key(tmp):
    p = _task_file(tmp, yaml.safe_dump({"tasks": [{**GOOD_TASK, "instrucion": "x"}]}))
    return p, "tasks.yaml", "tasks[0].instrucion", "unknown key"


def case_unknown_grader(tmp):
    t = {**GOOD_TASK, "graders": [{"type": "vibes"}]}
    p = _task_file(tmp, yaml.safe_dump({"tasks": [t]}))
    return p, "tasks.yaml", "tasks[0].graders[0].type", "unknown grader"


def case_bad_grader_param(tmp):
    t = {**GOOD_TASK, "graders": [{"type": "answer_match", "expected": "2", "mode": "fuzzy"}]}
    p = _task_file(tmp, yaml.safe_dump({"tasks": [t]}))
    return p, "tasks.yaml", "tasks[0].graders[0].mode", "'exact'"


def case_unknown_environment(tmp):
    t = {**GOOD_TASK, "environment": "atlantis"}
    p = _task_file(tmp, yaml.safe_dump({"tasks": [t]}))
    return p, "tasks.yaml", "tasks[0].environment", "unknown environment"


def case_task_not_mapping(tmp):
    p = _task_file(tmp, "- just\n- a list\n")
    return p, "tasks.yaml", None, "expected a mapping"


def case_no_graders(tmp):
    t = {k: v for k, v in GOOD_TASK.items() if k != "graders"}
    p = _task_file(tmp, yaml.safe_dump({"tasks": [t]}))
    return p, "tasks.yaml", "tasks[0].graders", "required"


def case_negative_weight(tmp):
    t = {**GOOD_TASK, "weight": -1}
    p = _task_file(tmp, yaml.safe_dump({"tasks": [t]}))
    return p, "tasks.yaml", "tasks[0].weight", "greater than 0"


def case_primary_unknown_arm(tmp):
    p = _suite(tmp, report={"primary": {"baseline": "base", "candidate": "ghost"}})
    return p, "suite.yaml", None, "unknown arm 'ghost'"


def case_misspelt_agent_param(tmp):
    arms = [{"name": "a", "agent": "simulated", "params": {"pp": 0.5}}]
    return _suite(tmp, arms=arms), "suite.yaml", "arms[0].params.pp", "unknown key"


def case_bad_agent_param_value(tmp):
    arms = [{"name": "a", "agent": "command", "params": {"command": "true", "where": "moon"}}]
    return _suite(tmp, arms=arms), "suite.yaml", "arms[0].params.where", "'sandbox'"


def case_unimportable_agent_path(tmp):
    arms = [{"name": "a", "agent": "no_such_module:Agent"}]
    return _suite(tmp, arms=arms), "suite.yaml", "arms[0].agent", "cannot import"


def case_misspelt_sandbox_option(tmp):
    p = _suite(tmp, sandbox="unsafe-local", sandbox_options={"base_dirr": "/tmp"})
    return p, "suite.yaml", "sandbox_options.base_dirr", "unknown key"


def case_misspelt_inner_sandbox_option(tmp):
    options = {"inner": "unsafe-local", "kill": 0.1, "base_dirr": "/tmp"}
    p = _suite(tmp, sandbox="faulty", sandbox_options=options)
    return p, "suite.yaml", "sandbox_options.base_dirr", "unknown key"


def case_misspelt_executor_option(tmp):
    p = _suite(tmp, executor="ray", executor_options={"num_cpu": 1})
    return p, "suite.yaml", "executor_options.num_cpu", "unknown key"


def case_options_for_an_executor_without_any(tmp):
    p = _suite(tmp, executor_options={"num_cpus": 1})
    return p, "suite.yaml", "executor_options.num_cpus", "unknown key"


def case_unknown_executor(tmp):
    return _suite(tmp, executor="slurm"), "suite.yaml", "executor", "unknown executor"


def case_missing_suite_file(tmp):
    return tmp / "absent.yaml", "absent.yaml", None, "file not found"


CASES = [v for k, v in sorted(globals().items()) if k.startswith("case_")]


def load_suite(path):
    """What `harness run` checks before the store: the suite resolved, its executor bound."""
    resolved = load(path)
    bind(resolved)
    return resolved


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[5:] for c in CASES])
def test_broken_config_is_one_named_line(case, tmp_path):
    path, file, field, text = case(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    message = str(info.value)
    assert file in message
    if field:
        assert f"field '{field}'" in message
    assert text in message
    assert "\n" not in message


def test_line_numbers_are_reported(tmp_path):
    path = _suite(tmp_path)
    text = path.read_text().replace("trials: 2", "trials: -3")
    path.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("trials"))
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert f"suite.yaml:{line}:" in str(info.value)


@pytest.mark.parametrize(
    "case",
    [
        case_unknown_key,
        case_bad_yaml,
        case_unknown_grader,
        case_missing_suite_file,
        case_misspelt_agent_param,
        case_misspelt_sandbox_option,
        case_misspelt_executor_option,
    ],
    ids=lambda c: c.__name__[5:],
)
def test_cli_prints_one_line_and_exits_2(case, tmp_path, cli):
    path, file, _field, text = case(tmp_path)
    result = cli("run", str(path), "--store", f"sqlite:///{tmp_path / 's.db'}")
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert file in lines[0] and text in lines[0]
    if _field:
        assert f"field '{_field}'" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
