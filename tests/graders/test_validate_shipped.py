"""`harness validate` on every shipped suite: zero broken tasks, zero mutant false passes;
and graders give the same verdicts on the local and Docker backends."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import in_parallel, run_cli

SUITES = [
    "tasks/demo/suite.yaml",
    "tasks/qa/suite.yaml",
    "tasks/shell/suite.yaml",
    "tasks/retail/suite.yaml",
]


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_validate_shipped_suite(suite):
    result = run_cli("validate", suite, "--sandbox", "local", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "validation passed" in result.stdout
    assert "false pass:" not in result.stdout and "Broken tasks" not in result.stdout


def _run_on(suite: str, backend: str, db: Path) -> list[tuple]:
    """Run ``suite`` once per task on ``backend``; its (arm, task, status, score) rows."""
    result = run_cli(
        "run",
        suite,
        "--sandbox",
        backend,
        "--trials",
        "1",
        "--store",
        f"sqlite:///{db}",
        "-q",
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT arm, task_id, status, score FROM trials").fetchall())


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["tasks/retail/suite.yaml", "tasks/shell/suite.yaml"])
def test_graders_agree_on_local_and_docker(suite, tmp_path, docker_ready):
    # The two runs share nothing (own store, own sandboxes), so they run at the same time:
    # the Docker run mostly waits on the daemon while the local one uses the CPU.
    local, docker = in_parallel(
        lambda: _run_on(suite, "local", tmp_path / "local.db"),
        lambda: _run_on(suite, "docker", tmp_path / "docker.db"),
    )
    assert local == docker
    assert {v[2] for v in docker} == {"passed", "failed"}
