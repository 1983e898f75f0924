"""Faults around the real Docker backend: injected creation failures and mid-trial kills, and
the Docker daemon stopped for 20 s mid-run. The run completes, every trial has exactly one
final row, verdicts equal a clean run's, and crashes are counted."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, run_cli, wait_for


def _suite(tmp: Path, name: str, n_tasks: int, **extra) -> Path:
    d = tmp / name
    d.mkdir()
    tasks = yaml.safe_load((REPO / "tasks/demo/tasks.yaml").read_text())
    tasks["tasks"] = tasks["tasks"][:n_tasks]
    (d / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    suite = {
        "name": "docker-faults",
        "seed": 11,
        "trials": 2,
        "tasks": ["tasks.yaml"],
        "environments_dir": str(REPO / "environments"),
        "concurrency": 4,
        "arms": [{"name": "sim", "agent": "simulated", "params": {"p": 0.6}}],
        "sandbox": "docker",
        "retries": {"max_attempts": 8, "backoff_s": 0.2},
        **extra,
    }
    (d / "suite.yaml").write_text(yaml.safe_dump(suite))
    return d / "suite.yaml"


def _verdicts(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT task_id, trial_index, status FROM trials").fetchall())


def _crashes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM attempts WHERE outcome='infra_error'").fetchone()[
            0
        ]


@pytest.mark.slow
def test_injected_docker_faults_change_no_verdict(tmp_path, docker_ready):
    clean = _suite(tmp_path, "clean", 18)
    assert (
        run_cli("run", str(clean), "--store", f"sqlite:///{tmp_path / 'c.db'}", "-q").returncode
        == 0
    )
    faulty = _suite(
        tmp_path,
        "faulty",
        18,
        sandbox="faulty",
        sandbox_options={"inner": "docker", "create_failure": 0.2, "kill": 0.05, "seed": 7},
    )
    result = run_cli("run", str(faulty), "--store", f"sqlite:///{tmp_path / 'f.db'}", "-q")
    assert result.returncode == 0, result.stderr
    assert _verdicts(tmp_path / "f.db") == _verdicts(tmp_path / "c.db")
    assert len(_verdicts(tmp_path / "f.db")) == 36
    assert _crashes(tmp_path / "f.db") >= 1  # ~20% of creations fail, ~5% of sandboxes killed
    report = run_cli("report", "--json", "--store", f"sqlite:///{tmp_path / 'f.db'}")
    assert report.returncode == 0


@pytest.mark.slow
def test_docker_daemon_down_for_20s_mid_run(tmp_path, docker_ready):
    """The run's daemon is one of the test's own (``tests.dockerd``): stopping it touches
    no other test's containers."""
    from tests.dockerd import PrivateDockerd

    daemon = PrivateDockerd(subnet="10.231.48.1/24")
    try:
        daemon.start()
        daemon.load_image("harness-base:latest")
        _outage_run(tmp_path, daemon)
    finally:
        daemon.remove()


def _outage_run(tmp_path: Path, daemon) -> None:
    arms = [{"name": "sim", "agent": "simulated", "params": {"p": 0.6, "delay_s": 0.3}}]
    env = {**os.environ, "PYTHONPATH": str(REPO), "DOCKER_HOST": daemon.url}
    clean = _suite(tmp_path, "clean", 12, arms=arms, concurrency=2)
    done = run_cli("run", str(clean), "--store", f"sqlite:///{tmp_path / 'c.db'}", "-q", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    suite = _suite(tmp_path, "outage", 12, arms=arms, concurrency=2)
    db = tmp_path / "o.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(suite),
            "--store",
            f"sqlite:///{db}",
            "-q",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def finished() -> int:
        try:
            with sqlite3.connect(db) as conn:
                return conn.execute("SELECT count(*) FROM trials").fetchone()[0]
        except sqlite3.OperationalError:
            return 0

    try:
        assert wait_for(lambda: finished() >= 4, timeout=120)
        daemon.stop()
        assert not daemon.answers()
        time.sleep(20)
    finally:
        daemon.start()
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}: {err[-3000:]}"
    assert _verdicts(db) == _verdicts(tmp_path / "c.db")
    assert _crashes(db) >= 1
    assert run_cli("gc", env={"DOCKER_HOST": daemon.url}).returncode == 0
