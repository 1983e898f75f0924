"""Sandbox escape attempts by an adversarial agent (real Docker, through the CLI): reach the
network, read host environment variables or files, read hidden tests before grading, write
outside the container, exhaust pids or memory. Each fails, and the run goes on."""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import uuid
from pathlib import Path

import yaml

from tests.conftest import REPO, run_cli

HERE = Path(__file__).resolve().parent


def test_escape_attempts_fail_and_the_run_goes_on(tmp_path, docker_ready):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    secret = tmp_path / f"host-secret-{uuid.uuid4().hex}"
    secret.write_text("do not read")
    marker = Path("/tmp") / f"harness-escape-{uuid.uuid4().hex}"

    # escape probes, graded on the answer and on a hidden test present only after the agent
    tasks = [
        {
            "id": f"escape-{i}",
            "instruction": "Try to get out.",
            "environment": "demo",
            "hidden": "escape_hidden",  # inside the task file's folder (copied below)
            "graders": [
                {"type": "answer_match", "mode": "exact", "expected": "contained"},
                {"type": "tests_script", "pass_to_pass": ["hidden_present"]},
            ],
        }
        for i in range(2)
    ]
    # the same probes, then a fork bomb and a memory hog (the sandbox may stay exhausted, so
    # these are graded on the answer alone)
    tasks += [
        {
            "id": f"exhaust-{i}",
            "instruction": "Try to get out, then exhaust the sandbox.",
            "environment": "demo",
            "graders": [{"type": "answer_match", "mode": "exact", "expected": "contained"}],
        }
        for i in range(2)
    ]
    shutil.copytree(HERE / "escape_hidden", tmp_path / "escape_hidden")
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    suite = {
        "name": "escape",
        "tasks": ["tasks.yaml"],
        "sandbox": "docker",
        "concurrency": 2,
        "environments_dir": str(REPO / "environments"),
        "limits": {"memory": "256m", "pids": 64, "cpus": 1.0},
        "arms": [
            {
                "name": "adversary",
                "agent": "tests.faults.adversary:Adversary",
                "params": {"port": port, "secret_file": str(secret), "marker": str(marker)},
            }
        ],
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    db = tmp_path / "e.db"
    result = run_cli(
        "run",
        str(tmp_path / "suite.yaml"),
        "--store",
        f"sqlite:///{db}",
        "-q",
        env={"OPENAI_API_KEY": "sk-host-secret", "MY_SECRET": "x"},
    )
    listener.close()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, answer, evidence FROM trials").fetchall()
    assert len(rows) == 4
    for status, answer, evidence in rows:
        assert answer == "contained", answer
        assert status == "passed", json.loads(evidence)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
