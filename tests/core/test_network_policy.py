"""Every network setting of a task is honoured or refused, never dropped: open egress is
the user's to allow (suite ``allow_internet`` or ``--allow-internet``), a backend that
cannot honour a task's policy refuses it at load naming the task and the setting, the run
says once that it allows open egress, and every trial row records each sandbox's policy."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from harness.config.loader import load_suite
from harness.errors import ConfigError
from harness.network import agent_policy, grading_policy
from tests.conftest import REPO, run_cli


def _suite(tmp: Path, **task: object) -> Path:
    tasks = [
        {
            "id": "net/open",
            "instruction": "What is 1 + 1?",
            "environment": "demo",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": 2}],
            "solution": {"answer": "2"},
            **task,
        },
        {
            "id": "net/closed",
            "instruction": "What is 2 + 2?",
            "environment": "demo",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": 4}],
            "solution": {"answer": "4"},
        },
    ]
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    suite = {
        "name": "network",
        "tasks": ["tasks.yaml"],
        "environments_dir": str(REPO / "environments"),
        "arms": [{"name": "oracle", "agent": "oracle"}],
        "sandbox": "local",
        "trials": 1,
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("task", "field"),
    [({"internet": True}, "internet"), ({"grading": {"internet": True}}, "grading.internet")],
)
def test_open_egress_is_refused_unless_the_suite_allows_it(
    tmp_path: Path, task: dict, field: str
) -> None:
    path = _suite(tmp_path, **task)
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    text = str(caught.value)
    assert "net/open" in text and field in text and "--allow-internet" in text, text
    assert "\n" not in text.strip()
    resolved = load_suite(path, {"allow_internet": True})
    opened = resolved.task("net/open").task
    env = resolved.environments["demo"]
    phase = agent_policy(env, opened) if field == "internet" else grading_policy(env, opened)
    assert phase.describe() == "open"


def test_policies_of_each_sandbox() -> None:
    """The agent's hosts never reach the grader, nor the grader's the agent."""
    from harness.config.models import Task

    base = {
        "id": "t",
        "instruction": "x",
        "graders": [{"type": "answer_match", "expected": "x"}],
    }
    both = Task.model_validate(
        {**base, "network": ["10.0.0.2", "10.0.0.1"], "grading": {"network": ["pypi.org"]}}
    )
    assert agent_policy(None, both).describe() == "allowlist: 10.0.0.1, 10.0.0.2"
    assert grading_policy(None, both).describe() == "allowlist: pypi.org"
    assert grading_policy(None, Task.model_validate(base)).describe() == "none"
    with pytest.raises(ValueError, match="graded in place"):
        Task.model_validate({**base, "grade_in_place": "why", "grading": {"root": True}})


def test_each_phase_of_a_sandbox_that_lives_through_several() -> None:
    """Graded in place, the grading's network is the agent's sandbox's while graded (the
    agent's when it gives none); a step's own network is its turn's, and its grading in
    place has it too unless the step's grading says otherwise; each is recorded."""
    from harness.config.models import Task
    from harness.network import phases, recorded

    env = _environment()
    base = {
        "id": "t",
        "instruction": "x",
        "environment": "demo",
        "graders": [{"type": "answer_match", "expected": "x"}],
        "grade_in_place": "why",
    }
    graded = Task.model_validate({**base, "grading": {"network": ["10.0.0.9"]}})
    assert recorded({"demo": env}, graded) == {"agent": "none", "grading": "allowlist: 10.0.0.9"}
    assert [p.switched for p in phases({"demo": env}, graded)] == [False, True]
    same = Task.model_validate({**base, "internet": True})
    assert recorded({"demo": env}, same) == {"agent": "open", "grading": "open"}
    steps = Task.model_validate(
        {
            **base,
            "steps": [
                {"name": "one", "instruction": "a", "network": ["10.0.0.1"]},
                {
                    "name": "two",
                    "instruction": "b",
                    "internet": True,
                    "grade_in_place": "why",
                    "grading": {"network": []},
                },
                {"name": "three", "instruction": "c"},
            ],
        }
    )
    assert recorded({"demo": env}, steps) == {
        "agent": "none",
        "grading": "none",
        "agent: step one": "allowlist: 10.0.0.1",
        "grading: step one": "allowlist: 10.0.0.1",
        "agent: step two": "open",
        "grading: step two": "none",
    }
    assert [(p.key, p.switched) for p in phases({"demo": env}, steps)] == [
        ("agent", False),
        ("agent: step one", True),
        ("grading: step one", False),
        ("agent: step two", True),
        ("grading: step two", True),
        ("grading: step three", False),
    ]
    with pytest.raises(ValueError, match="only network and internet"):
        Task.model_validate(
            {
                **base,
                "steps": [
                    {
                        "name": "one",
                        "instruction": "a",
                        "grade_in_place": "why",
                        "grading": {"environment": "other"},
                    }
                ],
            }
        )


def _environment():
    from harness.config.models import Environment, EnvironmentSpec

    return Environment(EnvironmentSpec(name="demo", image={"ref": "x"}), REPO)


@pytest.mark.parametrize(
    ("task", "field", "what"),
    [
        ({"internet": True}, "internet", "open egress"),
        ({"network": ["10.1.2.3"]}, "network", "an egress allowlist"),
        ({"grading": {"network": ["10.1.2.3"]}}, "grading.network", "an egress allowlist"),
        ({"grading": {"root": True}}, "grading.root", "root capabilities"),
    ],
)
def test_a_backend_that_cannot_honour_the_policy_refuses_the_task(
    tmp_path: Path, task: dict, field: str, what: str
) -> None:
    path = _suite(tmp_path, **task)
    result = run_cli("run", str(path), "--sandbox", "bwrap", "--allow-internet", "-q")
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert "net/open" in line and field in line and what in line and "docker" in line, line


def test_a_backend_that_cannot_switch_a_running_sandboxs_network_refuses_the_task(
    tmp_path: Path,
) -> None:
    path = _suite(tmp_path, grade_in_place="why", grading={"network": ["10.1.2.3"]})
    result = run_cli("run", str(path), "--sandbox", "bwrap", "-q")
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert "net/open" in line and "grading.network" in line and "switched" in line, line


def test_open_egress_for_one_step_needs_the_users_consent(tmp_path: Path) -> None:
    step = {"name": "one", "instruction": "x", "internet": True}
    path = _suite(tmp_path, steps=[step])
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert "steps" in str(caught.value) and "internet" in str(caught.value)
    assert "--allow-internet" in str(caught.value)


def test_the_run_announces_open_egress_once_and_records_every_trials_policy(
    tmp_path: Path,
) -> None:
    path = _suite(tmp_path, internet=True, grading={"network": ["10.9.8.7"]})
    db = tmp_path / "n.db"
    result = run_cli("run", str(path), "--allow-internet", "--store", f"sqlite:///{db}", "-q")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    said = [line for line in result.stderr.splitlines() if line.startswith("open egress")]
    assert len(said) == 1 and "net/open" in said[0] and "1 task(s)" in said[0], result.stderr
    rows = sqlite3.connect(db).execute("select task_id, evidence from trials").fetchall()
    networks = {task: json.loads(evidence)["network"] for task, evidence in rows}
    assert networks == {
        "net/open": {"agent": "open", "grading": "allowlist: 10.9.8.7"},
        "net/closed": {"agent": "none", "grading": "none"},
    }
    closed = run_cli("run", str(_suite(tmp_path)), "--store", f"sqlite:///{db}", "-q")
    assert closed.returncode == 0 and "open egress" not in closed.stderr, closed.stderr
