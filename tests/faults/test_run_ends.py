"""A driver killed mid-attempt, and a run stopped by two signals: real `harness run`
processes, real signals, a real SQLite store.

- SIGKILL while trials are in flight: the resume records each cut attempt as
  ``driver_died`` (the attempt counts and crash rate of the report include them) and
  then runs the trials again.
- A second SIGINT/SIGTERM while trials are in flight ends the process within seconds.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from harness.errors import DRIVER_DIED
from tests.conftest import REPO, run_cli, wait_for, write_suite

KEY = "arm, task_id, trial_index, variant"


def _query(db, sql: str) -> list[tuple]:
    try:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # no such table yet
        return []


def _slow_suite(tmp_path, delay_s: float):
    arms = [{"name": "base", "agent": "simulated", "params": {"p": 0.6, "delay_s": delay_s}}]
    return write_suite(tmp_path / "s", n_tasks=6, trials=2, concurrency=3, arms=arms)


def _start(*args: str) -> subprocess.Popen:
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HARNESS_STORE", None)
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", *args, "-q"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_killed_driver_s_cut_attempts_are_recorded_on_resume(tmp_path):
    suite = _slow_suite(tmp_path, delay_s=1.5)
    db = tmp_path / "k.db"
    url = f"sqlite:///{db}"
    proc = _start(str(suite), "--store", url)
    # some trials finished, others in flight (their marks committed): then SIGKILL
    marked = f"SELECT {KEY} FROM trials_in_flight"
    assert wait_for(
        lambda: _query(db, "SELECT count(*) FROM trials")[:1] >= [(1,)] and _query(db, marked),
        timeout=120,
    ), f"no trial finished with others in flight in 120 s (exit {proc.poll()})"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = set(_query(db, f"SELECT {KEY} FROM trials"))
    cut = set(_query(db, marked)) - finished
    assert cut, "no trial was in flight when the driver was killed"
    assert not _query(db, "SELECT * FROM attempts WHERE outcome = 'driver_died'")
    (run_id,) = _query(db, "SELECT id FROM runs")[0]

    result = run_cli("run", "--resume", run_id, "--store", url, "-q")
    assert result.returncode == 0, result.stderr
    died = _query(db, f"SELECT {KEY}, attempt, error FROM attempts WHERE outcome = 'driver_died'")
    assert {row[:4] for row in died} == cut and len(died) == len(cut)
    assert all(row[4] == 1 and "driver process died" in row[5] for row in died)
    assert not _query(db, "SELECT * FROM trials_in_flight")
    assert len(_query(db, "SELECT id FROM trials")) == 12  # every trial, once

    from harness.report import load_report

    infra = load_report(run_id, url, n_resamples=200)["arms"]["base"]["infra"]
    attempts = _query(db, "SELECT count(*) FROM attempts")[0][0]
    assert infra["attempts"] == attempts
    assert infra["attempts_by_outcome"][DRIVER_DIED] == len(cut)
    assert infra["infra_error_attempts"] == len(cut)
    assert infra["crash_rate"]["estimate"] == pytest.approx(len(cut) / attempts)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_ends_the_run_within_seconds(tmp_path, sig):
    suite = _slow_suite(tmp_path, delay_s=120)  # trials that would run for two minutes
    db = tmp_path / "i.db"
    proc = _start(str(suite), "--store", f"sqlite:///{db}")
    assert wait_for(lambda: len(_query(db, "SELECT * FROM trials_in_flight")) == 3, timeout=120)
    proc.send_signal(sig)
    time.sleep(1.0)
    assert proc.poll() is None  # the first signal waits for the trials in flight
    proc.send_signal(sig)
    t0 = time.monotonic()
    _out, err = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 4, err
    assert took < 15, f"the run took {took:.1f} s to end after the second signal"
    assert "Traceback" not in err and "--resume" in err
    assert _query(db, "SELECT status FROM runs") == [("interrupted",)]
    # the aborted trials' attempts are recorded as interrupted, and none is left in flight
    assert len(_query(db, "SELECT * FROM attempts WHERE outcome = 'interrupted'")) == 3
    assert not _query(db, "SELECT * FROM trials_in_flight")
