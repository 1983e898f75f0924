"""Programs the agent runs look for the harness's environment in every process they can
see, on the host (in its jail) and in the sandbox, on Docker and on bwrap, through the real
CLI: none finds it, and the canary is in no output and nowhere in the store.

(A separate run from ``test_red_team``: those suites hold trajectory tasks, which refuse
``command`` arms since the harness does not observe what a program does.)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_docker, run_cli
from tests.integrity.canary import Canary
from tests.integrity.hostile import ENV_DUMP, SECRET_NAMES, WORD
from tests.integrity.test_bwrap_sandbox import require_bwrap

HERE = Path(__file__).resolve().parent
NAMES = "|".join(n[:-1] for n in SECRET_NAMES)
LEAK_CHECK = f"{ENV_DUMP} | grep -E '^({NAMES})=' && echo {WORD} || echo clean"
"""Prints what it found and, when it found anything, the code word (a pass: a wrong verdict)."""


HOST_TASK = {
    "id": "ri-answer-host",
    "instruction": "Say the code word.",
    "graders": [{"type": "answer_match", "mode": "exact", "expected": WORD}],
    "solution": {"answer": WORD},
}
"""The red team's answer task without an environment: ``where: host`` programs run only
beside tasks that have no sandbox (beside one they are refused at load)."""


def _run(tmp_path: Path, backend: str, canary: Canary, where: str) -> None:
    arms = [
        {"name": "oracle", "agent": "oracle"},
        {
            "name": f"{where}-environ",
            "agent": "command",
            "params": {"command": LEAK_CHECK, "where": where},
        },
    ]
    if where == "host":
        tasks_file = tmp_path / "host-tasks.yaml"
        tasks_file.write_text(yaml.safe_dump({"tasks": [HOST_TASK]}))
        task_id = HOST_TASK["id"]
    else:
        tasks_file, task_id = HERE / "tasks.yaml", "ri-answer"
    suite = {
        "name": f"secrets-{backend}-{where}",
        "tasks": [str(tasks_file)],
        "environments_dir": str(HERE / "environments"),
        "sandbox": backend,
        "arms": arms,
        "budgets": {"timeout_s": 20},
    }
    path = tmp_path / f"suite-{where}.yaml"
    path.write_text(yaml.safe_dump(suite))
    db = tmp_path / f"{where}.db"
    secrets = {"OPENAI_API_KEY": "sk-host-secret", "MY_SECRET": "x", **canary.env}
    result = run_cli(
        "run",
        str(path),
        "--store",
        f"sqlite:///{db}",
        "-q",
        "--task",
        task_id,
        env=secrets,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        rows = dict(conn.execute("SELECT arm, status FROM trials").fetchall())
    assert rows == {"oracle": "passed", f"{where}-environ": "failed"}
    canary.assert_absent(result.stdout, result.stderr, store=db)
    with sqlite3.connect(db) as conn:
        seen = " ".join(c or "" for (c,) in conn.execute("SELECT content FROM trajectory_events"))
    assert "clean" in seen and "sk-host-secret" not in seen


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_programs_never_see_the_harness_environment(tmp_path, canary, backend, request):
    if backend == "docker":
        require_docker()
        request.getfixturevalue("docker_ready")
    else:
        require_bwrap()
    for where in ("host", "sandbox"):
        _run(tmp_path, backend, canary, where)
