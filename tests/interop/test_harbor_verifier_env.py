"""Harbor's ``[verifier.env]`` (issue 25): literal variables are the verifier's, given to its
tests in the grading sandbox (a file their command reads before ``test.sh``; a multi-step
task's under each step's own); a variable of the host (``${VAR}``, a key) never goes into a
sandbox: only a model-judge script takes one (as the judge grader, tested in
test_harbor_judge.py), anything else is refused in one line saying why."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from harness.importers.harbor import import_harbor
from tests.conftest import run_cli

TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/out.txt 2>/dev/null)" = "$GREETING, $WHO" ]; then echo 1; else echo 0; fi \
  > /logs/verifier/reward.txt
"""


def _task(root: Path, env: str, name: str = "greet") -> Path:
    task = root / "src" / name
    for d in ("environment", "tests", "solution"):
        (task / d).mkdir(parents=True)
    (task / "task.toml").write_text(
        f'version = "1.0"\n[environment]\nnetwork_mode = "no-network"\n[verifier.env]\n{env}\n'
    )
    (task / "instruction.md").write_text("Write the greeting to /app/out.txt.\n")
    (task / "environment" / "Dockerfile").write_text("FROM harness-base:bookworm-1\nWORKDIR /app\n")
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "solution" / "solve.sh").write_text("echo 'hello, world' > /app/out.txt\n")
    return task


def test_literal_variables_reach_the_tests_on_docker(tmp_path: Path, docker_ready) -> None:
    _task(tmp_path, 'GREETING = "hello"\nWHO = "world"')
    done = import_harbor(tmp_path / "src", tmp_path / "out")
    assert done.imported == ["greet"] and not done.judged
    written = (
        tmp_path / "out" / "tasks" / "harbor" / "hidden" / "greet" / ".harbor-env"
    ).read_text()
    assert written == "export GREETING=hello\nexport WHO=world\n"
    store = tmp_path / "h.db"
    suite = tmp_path / "out" / "tasks" / "harbor" / "suite.yaml"
    run = run_cli("run", str(suite), "--store", f"sqlite:///{store}", "-q", timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, status, evidence from trials")
    got = {arm: (status, json.loads(ev)) for arm, status, ev in rows}
    assert {arm: s for arm, (s, _) in got.items()} == {"oracle": "passed", "noop": "failed"}


def test_a_variable_of_the_host_is_refused_and_never_written(tmp_path: Path) -> None:
    _task(tmp_path, 'TOKEN = "${HOST_TOKEN}"\nGREETING = "hello"')
    done = import_harbor(tmp_path / "src", tmp_path / "out")
    assert done.refused == {
        "greet": "verifier environment variables from the host (tests/test.sh runs "
        "'mkdir -p /logs/verifier', not one 'uv run /tests/SCRIPT.py' judge script): only a "
        "model-judge script takes them, as the judge grader, since no key may go into a sandbox"
    }
    assert not list((tmp_path / "out").rglob(".harbor-env"))


def test_a_multi_step_tasks_variables_lie_under_each_steps_own(tmp_path: Path) -> None:
    task = _task(tmp_path, 'GREETING = "hello"\nWHO = "world"', "steps")
    (task / "task.toml").write_text(
        'version = "1.0"\n[verifier.env]\nGREETING = "hello"\nWHO = "world"\n'
        '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n[steps.verifier.env]\nWHO = "you"\n'
    )
    for step in ("one", "two"):
        (task / "steps" / step).mkdir(parents=True)
        (task / "steps" / step / "instruction.md").write_text("Greet.\n")
    done = import_harbor(tmp_path / "src", tmp_path / "out")
    assert done.imported == ["steps"], done.refused
    hidden = tmp_path / "out" / "tasks" / "harbor" / "hidden" / "steps"
    assert (
        hidden / "one" / ".harbor-env"
    ).read_text() == "export GREETING=hello\nexport WHO=world\n"
    assert (hidden / "two" / ".harbor-env").read_text() == "export GREETING=hello\nexport WHO=you\n"
    (task / "task.toml").write_text(
        'version = "1.0"\n[verifier.env]\nKEY = "${K}"\n[[steps]]\nname = "one"\n'
    )
    again = import_harbor(tmp_path / "src", tmp_path / "again")
    assert again.refused["steps"].startswith(
        "verifier environment variables from the host in a multi-step task"
    )
