"""The Docker backend through the CLI: same verdicts as local, pinned ids on every row,
--locked, and no container left after a normal, an interrupted or a killed run (+ gc)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import count_trials, run_cli, wait_for  # noqa: E402


def _suite(tmp: Path, arms: list[dict], n_tasks: int = 6, **extra) -> Path:
    tasks = yaml.safe_load((ROOT / "tasks/demo/tasks.yaml").read_text())
    tasks["tasks"] = tasks["tasks"][:n_tasks]
    (tmp / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    suite = {
        "name": "docker-cli",
        "seed": 5,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "environments_dir": str(ROOT / "environments"),
        "arms": arms,
        "sandbox": "docker",
        "concurrency": 4,
        **extra,
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _containers(docker_client, run_id: str) -> list:
    # the low-level list: no per-container inspect that races with removal
    return docker_client.api.containers(all=True, filters={"label": f"harness.run={run_id}"})


def _run_id(db: Path) -> str | None:
    try:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT id FROM runs").fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else None


def test_docker_and_local_agree_for_oracle_and_noop(tmp_path, docker_client):
    suite = _suite(
        tmp_path,
        [{"name": "oracle", "agent": "oracle"}, {"name": "noop", "agent": "noop"}],
        n_tasks=12,
    )
    verdicts = {}
    for backend in ("docker", "local"):
        url = f"sqlite:///{tmp_path / backend}.db"
        result = run_cli("run", str(suite), "--sandbox", backend, "--store", url, "-q")
        assert result.returncode == 0, result.stderr
        with sqlite3.connect(tmp_path / f"{backend}.db") as conn:
            verdicts[backend] = sorted(
                conn.execute("SELECT arm, task_id, status FROM trials").fetchall()
            )
            if backend == "docker":
                run = conn.execute("SELECT id, image_ids FROM runs").fetchone()
                pinned = json.loads(run[1])["demo"]
                assert pinned.startswith("sha256:")
                ids = {r[0] for r in conn.execute("SELECT image_id FROM trials")}
                assert ids == {pinned}  # every trial ran on exactly the pinned image
                assert not _containers(docker_client, run[0])
    assert verdicts["docker"] == verdicts["local"]
    assert {s for _, _, s in verdicts["docker"]} == {"passed", "failed"}


def test_locked_refuses_a_changed_image(tmp_path, docker_client):
    env_root = tmp_path / "environments" / "lockme"
    (env_root / "files").mkdir(parents=True)
    (env_root / "files" / "data.txt").write_text("v1\n")
    (env_root / "Dockerfile").write_text("FROM harness-base:latest\nCOPY files/ /work/\n")
    (env_root / "environment.yaml").write_text(
        yaml.safe_dump({"name": "lockme", "image": {"dockerfile": "Dockerfile"}, "files": "files"})
    )
    (tmp_path / "tasks.yaml").write_text(
        yaml.safe_dump(
            {
                "tasks": [
                    {
                        "id": "read",
                        "instruction": "What does data.txt say?",
                        "environment": "lockme",
                        "graders": [{"type": "answer_match", "expected": "v1"}],
                        "solution": {"commands": ["cat data.txt"], "answer": "v1"},
                    }
                ]
            }
        )
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "name": "lock",
                "tasks": ["tasks.yaml"],
                "sandbox": "docker",
                "arms": [{"name": "o", "agent": "oracle"}],
            }
        )
    )
    url = f"sqlite:///{tmp_path / 'l.db'}"
    assert run_cli("lock", str(suite)).returncode == 0
    assert (tmp_path / "suite.lock.json").is_file()
    assert run_cli("run", str(suite), "--locked", "--store", url, "-q").returncode == 0
    (env_root / "files" / "data.txt").write_text("v2\n")  # the recipe's content changed
    result = run_cli("run", str(suite), "--locked", "--store", url, "-q")
    assert result.returncode == 5, result.stderr
    assert "lockme" in result.stderr and "does not match" in result.stderr
    assert "Traceback" not in result.stderr
    # The file that changed, named in one short line, not the image ids it changed.
    [line] = result.stderr.strip().splitlines()
    assert "environment 'lockme': files/data.txt changed since the lock was written" in line
    assert f"harness lock {suite}" in line
    assert not re.search(r"[0-9a-f]{64}", line) and len(line) < 400, line


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


SLOW = [{"name": "slow", "agent": "simulated", "params": {"p": 0.5, "delay_s": 1.0}}]


def test_sigint_leaves_no_container(tmp_path, docker_client):
    suite = _suite(tmp_path, SLOW, n_tasks=12)
    db = tmp_path / "i.db"
    proc = _start(["run", str(suite), "--store", f"sqlite:///{db}", "-q"])
    assert wait_for(lambda: count_trials(db) >= 2, timeout=120)
    run_id = _run_id(db)
    assert _containers(docker_client, run_id)  # trials in flight right now
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)  # twice: abort in-flight trials too
    proc.communicate(timeout=120)
    assert proc.returncode == 4
    assert not _containers(docker_client, run_id)


def test_sigkill_then_gc_leaves_no_container(tmp_path, docker_client):
    suite = _suite(tmp_path, SLOW, n_tasks=12)
    db = tmp_path / "k.db"
    proc = _start(["run", str(suite), "--store", f"sqlite:///{db}", "-q"])
    assert wait_for(lambda: count_trials(db) >= 2, timeout=120)
    run_id = _run_id(db)
    assert wait_for(lambda: bool(_containers(docker_client, run_id)), timeout=30)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _containers(docker_client, run_id)  # a killed process cannot clean up...
    result = run_cli("gc")
    assert result.returncode == 0, result.stderr
    assert not _containers(docker_client, run_id)  # ...gc does
