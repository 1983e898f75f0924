"""`harness import harbor`: every Harbor example task imports or is refused with one line
naming the feature it needs; the shipped offline tasks in Harbor's layout run end to end on
Docker, the oracle passing and noop failing."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest

from harness.config.loader import load_suite
from harness.importers.harbor import find_tasks, import_harbor
from tests.conftest import REPO, run_cli
from tests.interop.tau_support import THIRD_PARTY

EXAMPLES = THIRD_PARTY / "harbor" / "examples" / "tasks"
SHIPPED = REPO / "tasks" / "harbor-examples"


def test_every_example_imports_or_is_refused_in_one_line(tmp_path: Path) -> None:
    if not EXAMPLES.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the pinned Harbor examples are missing at {EXAMPLES}")
        pytest.skip(f"the pinned Harbor examples are not at {EXAMPLES}")
    result = run_cli("import", "harbor", str(EXAMPLES), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    imported = [line.split()[1] for line in lines if line.startswith("imported  ")]
    refused = [line for line in lines if line.startswith("refused   ")]
    assert len(imported) + len(refused) == len(find_tasks(EXAMPLES))
    assert imported and refused
    assert all(re.fullmatch(r"refused   \S+: needs \S.*", line) for line in refused)
    assert any("docker-compose" in line for line in refused)
    assert any("GPUs" in line for line in refused)
    assert "hello-world" in imported
    resolved = load_suite(tmp_path / "tasks" / "harbor" / "suite.yaml")
    assert len(resolved.tasks) == len(imported)
    task = resolved.task("harbor/hello-world").task
    assert task.solution and "hello.txt" in task.solution.commands[0]
    assert resolved.environments["harbor-hello-world"].spec.workdir == "/app"


def test_refusal_names_the_feature(tmp_path: Path) -> None:
    task = tmp_path / "gpu-task"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM harness-base:latest\n")
    (task / "instruction.md").write_text("train it")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "task.toml").write_text("[environment]\ngpus = 2\n")
    done = import_harbor(task, tmp_path / "out")
    assert done.refused == {"gpu-task": "GPUs (environment.gpus = 2)"}
    (task / "task.toml").write_text("[environment]\ngpus = 0\n")
    assert import_harbor(task, tmp_path / "out").imported == ["gpu-task"]
    # A key the import reads, with a value of the wrong kind: refused in one line, no traceback.
    (task / "task.toml").write_text('[environment]\ncpus = "many"\n')
    why = import_harbor(task, tmp_path / "out").refused["gpu-task"]
    assert why.startswith("a readable task.toml (environment.cpus: "), why


def test_shipped_tasks_run_on_docker(tmp_path: Path, docker_ready) -> None:
    result = run_cli("import", "harbor", str(SHIPPED), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "3 imported, 0 refused" in result.stdout
    store = tmp_path / "h.db"
    suite = tmp_path / "tasks" / "harbor" / "suite.yaml"
    run = run_cli("run", str(suite), "--store", f"sqlite:///{store}", "-q", timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, task_id, status, reason from trials")
    outcome = {(arm, task): (status, reason) for arm, task, status, reason in rows}
    assert len(outcome) == 6
    for (arm, task), (status, reason) in outcome.items():
        assert status == ("passed" if arm == "oracle" else "failed"), (arm, task, reason)
        if arm == "noop":
            assert "reward 0" in reason, reason
