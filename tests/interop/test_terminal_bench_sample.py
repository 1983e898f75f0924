"""The offline Terminal-Bench sample (examples/terminal-bench): three tasks in Terminal-Bench
2's format, on the offline base image, whose tests need no network. They import with no
refusal and, on Docker, the oracle passes every one and noop fails every one."""

from __future__ import annotations

import tomllib
from pathlib import Path

from harness.importers.harbor import find_tasks
from tests.conftest import REPO, run_cli
from tests.interop.test_harbor_import import assert_oracle_passes_noop_fails

SAMPLE = REPO / "examples" / "terminal-bench"


def test_the_sample_is_in_terminal_benchs_format() -> None:
    tasks = find_tasks(SAMPLE)
    assert [t.name for t in tasks] == ["backup-script", "status-counts", "top-customers"]
    for task in tasks:
        toml = tomllib.loads((task / "task.toml").read_text())
        assert toml["schema_version"] == "1.1" and toml["task"]["name"].startswith("harness-")
        assert {"difficulty", "category", "expert_time_estimate_min"} <= set(toml["metadata"])
        # Rebuilt offline: no prebuilt image, no network, the local base image.
        env = toml["environment"]
        assert "docker_image" not in env and env["network_mode"] == "no-network"
        assert (
            (task / "environment" / "Dockerfile")
            .read_text()
            .startswith("FROM harness-base:latest\n")
        )
        for part in ("instruction.md", "solution/solve.sh", "tests/test.sh"):
            assert (task / part).is_file(), (task.name, part)
        tests = (task / "tests" / "test_outputs.py").read_text()
        assert "def test_" in tests
        # Nothing is fetched at grading time (Terminal-Bench's verifiers install with uvx).
        lines = (task / "tests" / "test.sh").read_text().splitlines()
        assert not [x for x in lines if x.strip().startswith(("uvx", "curl", "apt-get", "pip"))]


def test_oracle_passes_and_noop_fails_on_docker(tmp_path: Path, docker_ready) -> None:
    result = run_cli("import", "harbor", str(SAMPLE), "--out", str(tmp_path))
    assert "3 imported, 0 refused" in result.stdout, result.stdout + result.stderr
    assert "public network" not in result.stdout
    assert_oracle_passes_noop_fails(tmp_path, 3, "--concurrency", "6")
