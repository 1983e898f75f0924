"""`harness validate` on every shipped suite: zero broken tasks, zero mutant false passes;
and graders give the same verdicts on the local and Docker backends."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import run_cli

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


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["tasks/retail/suite.yaml", "tasks/shell/suite.yaml"])
def test_graders_agree_on_local_and_docker(suite, tmp_path, docker_ready):
    verdicts = {}
    for backend in ("local", "docker"):
        db = tmp_path / f"{backend}.db"
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
            verdicts[backend] = sorted(
                conn.execute("SELECT arm, task_id, status, score FROM trials").fetchall()
            )
    assert verdicts["local"] == verdicts["docker"]
    assert {v[2] for v in verdicts["docker"]} == {"passed", "failed"}
