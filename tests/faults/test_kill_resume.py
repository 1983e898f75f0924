"""SIGKILL at 20 random points, each followed by resume: no missing, no duplicate rows, and
the same verdicts as an uninterrupted run with the same seeds."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, run_cli, write_suite


def _rows(db) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT arm, task_id, trial_index, variant, passed FROM trials"
        ).fetchall()


def _run_id(db) -> str | None:
    if not db.exists():
        return None
    try:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT id FROM runs").fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else None


@pytest.mark.slow
def test_sigkill_at_20_random_points_then_resume(tmp_path):
    arms = [
        {"name": "base", "agent": "simulated", "params": {"p": 0.5, "delay_s": 0.02}},
        {"name": "cand", "agent": "simulated", "params": {"p": 0.7, "delay_s": 0.02}},
    ]
    suite = write_suite(tmp_path / "s", n_tasks=12, trials=4, concurrency=4, arms=arms)
    total = 12 * 4 * 2

    clean_db = tmp_path / "clean.db"
    assert run_cli("run", str(suite), "--store", f"sqlite:///{clean_db}", "-q").returncode == 0
    clean = sorted(_rows(clean_db))

    db = tmp_path / "killed.db"
    rng = random.Random(2026)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    kills = 0
    while kills < 20:
        run_id = _run_id(db)
        args = ["--resume", run_id] if run_id else [str(suite)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "run", *args, "--store", f"sqlite:///{db}", "-q"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # a random point of the run: after the run row exists (start-up is 1-2 s), then 0-1 s in
        deadline = time.monotonic() + 30
        while _run_id(db) is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 1.0))
        if proc.poll() is not None:
            break  # finished before we could kill it
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        rows = _rows(db) if _run_id(db) else []
        keys = [r[:4] for r in rows]
        assert len(keys) == len(set(keys)), "duplicate final rows after a kill"
    run_id = _run_id(db)
    assert run_id
    result = run_cli("run", "--resume", run_id, "--store", f"sqlite:///{db}", "-q")
    assert result.returncode == 0, result.stderr
    rows = sorted(_rows(db))
    assert len(rows) == total
    assert rows == clean  # same verdicts as the uninterrupted run
    assert kills >= 10
