"""The CLI end to end in subprocesses: demo suite, report JSON, exit codes, SIGKILL + resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, wait_for


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM trials").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _keys(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT arm, task_id, trial_index, variant FROM trials").fetchall()


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_demo_suite_and_json_report(tmp_path, cli):
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    result = cli("run", "tasks/demo/suite.yaml", "--store", url)
    assert result.returncode == 0, result.stderr
    assert "run id:" in result.stderr
    report = cli("report", "--json", "--store", url)
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["run"]["suite"] == "demo"
    assert set(data["arms"]) == {"baseline", "candidate"}
    for arm in data["arms"].values():
        assert arm["tasks"] >= 30 and arm["clusters"] >= 5
        assert arm["trials_scheduled"] == arm["trials_completed"] == arm["tasks"] * 5
        s = arm["success"]
        assert s["lo"] <= s["estimate"] <= s["hi"] and s["n"] == arm["tasks"]
        assert [p["k"] for p in arm["pass_hat_k"]] == [1, 2, 3, 4, 5]
        assert arm["pass_hat_k"][0]["estimate"] == pytest.approx(s["estimate"])
    runs = cli("runs", "--store", url)
    assert data["run"]["id"] in runs.stdout


def test_oracle_and_noop_verdicts(tmp_path, cli):
    url = f"sqlite:///{tmp_path / 'v.db'}"
    result = cli("run", "tasks/demo/suite.yaml", "--store", url, "--trials", "1", "-q")
    assert result.returncode == 0
    suite = yaml.safe_load((REPO / "tasks/demo/suite.yaml").read_text())
    suite["arms"] = [{"name": "oracle", "agent": "oracle"}, {"name": "noop", "agent": "noop"}]
    suite["tasks"] = [str(REPO / "tasks/demo/tasks.yaml")]
    suite["environments_dir"] = str(REPO / "environments")
    suite.pop("report")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(suite))
    result = cli("run", str(path), "--store", url, "--trials", "1", "-q")
    assert result.returncode == 0, result.stderr
    data = json.loads(cli("report", "--json", "--store", url).stdout)
    assert data["arms"]["oracle"]["success"]["estimate"] == 1.0
    assert data["arms"]["noop"]["success"]["estimate"] == 0.0


def test_unresolved_trials_exit_3(tmp_path, cli, suite_writer):
    env = tmp_path / "environments" / "broken"
    env.mkdir(parents=True)
    (env / "environment.yaml").write_text(
        yaml.safe_dump({"name": "broken", "setup": ["echo boom >&2; exit 1"]})
    )
    suite = suite_writer(tmp_path / "suite", trials=1)
    tasks = yaml.safe_load((tmp_path / "suite" / "tasks.yaml").read_text())
    tasks["tasks"][0]["environment"] = "broken"
    (tmp_path / "suite" / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    url = f"sqlite:///{tmp_path / 'u.db'}"
    result = cli("run", str(suite), "--store", url, "-q")
    assert result.returncode == 3, result.stderr
    data = json.loads(cli("report", "--json", "--store", url).stdout)
    assert data["arms"]["base"]["trials_unresolved"] == 1
    assert data["arms"]["base"]["by_status"]["harness_error"] == 1


def _slow_suite(writer, tmp_path: Path) -> Path:
    return writer(
        tmp_path,
        n_tasks=10,
        trials=5,
        concurrency=4,
        arms=[
            {"name": "base", "agent": "simulated", "params": {"p": 0.5, "delay_s": 0.05}},
            {"name": "cand", "agent": "simulated", "params": {"p": 0.7, "delay_s": 0.05}},
        ],
    )


def _run_id(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id FROM runs").fetchone()[0]


def test_sigkill_then_resume_gives_exactly_one_row_each(tmp_path, suite_writer, cli):
    suite = _slow_suite(suite_writer, tmp_path)
    db = tmp_path / "k.db"
    proc = _start(["run", str(suite), "--store", f"sqlite:///{db}", "-q"])
    assert wait_for(lambda: _count(db) >= 20, timeout=60)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 20 <= _count(db) < 100
    result = cli("run", "--resume", _run_id(db), "--store", f"sqlite:///{db}", "-q")
    assert result.returncode == 0, result.stderr
    keys = _keys(db)
    assert len(keys) == 100 and len(set(keys)) == 100


def test_sigint_stops_cleanly_exit_4_and_resumes(tmp_path, suite_writer, cli):
    suite = _slow_suite(suite_writer, tmp_path)
    db = tmp_path / "i.db"
    proc = _start(["run", str(suite), "--store", f"sqlite:///{db}", "-q"])
    assert wait_for(lambda: _count(db) >= 10, timeout=60)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err
    assert "--resume" in err
    n = _count(db)
    assert 10 <= n < 100
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    result = cli("run", "--resume", _run_id(db), "--store", f"sqlite:///{db}", "-q")
    assert result.returncode == 0, result.stderr
    assert sorted(set(_keys(db))) == sorted(_keys(db)) and len(_keys(db)) == 100
