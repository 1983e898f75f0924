"""PostgreSQL outages under a real `harness run`: a server of the test's own, stopped and
started again (``tests/pgserver.py``), with a small ``store_outage_s`` window.

- back within the window: the run waits (one note when the store goes away, one when it is
  back), then finishes with every trial stored exactly once, exit 0;
- away past the window: exit 5 with one line naming the store, the window and the resume
  command; the run row cannot be written, so `harness runs` shows it interrupted with that
  command; the resume finishes the run;
- a second signal while the writer waits for the store ends the process within seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import REPO, run_cli, wait_for, write_suite

pytestmark = pytest.mark.skipif(
    os.environ.get("CI") != "true", reason="needs PostgreSQL binaries (CI=true)"
)


@pytest.fixture(scope="module")
def server():
    from tests.pgserver import ThrowawayPostgres

    pg = ThrowawayPostgres()
    yield pg
    pg.close()


class Run:
    """A `harness run` process whose stderr lines are collected as they come."""

    def __init__(self, *args: str):
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        env.pop("HARNESS_STORE", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "run", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def saw(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code


def _trials(url: str) -> list[tuple]:
    from harness.store import Store

    store = Store(url)
    try:
        run = store.latest_run()
        rows = store.trials(run.id) if run else []
        return [(t.arm, t.task_id, t.trial_index, t.variant) for t in rows]
    finally:
        store.close()


def _suite(tmp_path, outage_s: float, delay_s: float = 0.3):
    arms = [{"name": "base", "agent": "simulated", "params": {"p": 0.5, "delay_s": delay_s}}]
    return write_suite(
        tmp_path / "s", n_tasks=8, trials=2, concurrency=2, arms=arms, store_outage_s=outage_s
    )


def test_a_store_back_within_the_window_loses_nothing(server, tmp_path):
    url = server.new_database()
    run = Run(str(_suite(tmp_path, outage_s=60)), "--store", url)
    assert wait_for(lambda: len(_trials(url)) >= 2, timeout=120)
    server.stop()
    assert wait_for(lambda: run.saw("store unavailable"), timeout=60), run.lines
    time.sleep(3)
    assert run.proc.poll() is None  # waiting for the store, not stopped
    server.start()
    assert run.wait(timeout=180) == 0, run.lines
    keys = _trials(url)
    assert len(keys) == 16 and len(set(keys)) == 16
    away = [line for line in run.lines if "store unavailable" in line]
    assert len(away) == 1 and "waiting up to 60 s" in away[0]
    assert run.saw("store back after")
    assert not run.saw("Traceback")


def test_a_store_away_past_the_window_stops_the_run_with_exit_5(server, tmp_path):
    url = server.new_database()
    run = Run(str(_suite(tmp_path, outage_s=4)), "--store", url, "-q")
    assert wait_for(lambda: len(_trials(url)) >= 2, timeout=120)
    stored = len(_trials(url))
    server.stop()
    t0 = time.monotonic()
    try:
        code = run.wait(timeout=120)
        took = time.monotonic() - t0
    finally:
        server.start()
    assert code == 5, run.lines
    errors = [line for line in run.lines if line.startswith("error:")]
    assert len(errors) == 1 and len(run.lines) == 1, run.lines  # one line, nothing else
    assert "did not come back within 4 s" in errors[0]
    assert "harness run --resume" in errors[0] and "--store" in errors[0]
    assert took < 60, f"{took:.0f} s from the outage to the exit"
    assert len(_trials(url)) >= stored  # what was committed is kept
    # The run row could not be written while the server was down: shown as interrupted,
    # with the command that resumes it; the resume finishes the run.
    runs = run_cli("runs", "--store", url)
    assert runs.returncode == 0, runs.stderr
    assert "interrupted" in runs.stdout + runs.stderr
    assert "harness run --resume" in runs.stdout + runs.stderr
    run_id = errors[0].split("--resume ", 1)[1].split()[0]
    assert run_cli("run", "--resume", run_id, "--store", url, "-q").returncode == 0
    keys = _trials(url)
    assert len(keys) == 16 and len(set(keys)) == 16


def test_a_second_signal_ends_a_run_waiting_for_the_store(server, tmp_path):
    url = server.new_database()
    run = Run(str(_suite(tmp_path, outage_s=600)), "--store", url)
    assert wait_for(lambda: len(_trials(url)) >= 2, timeout=120)
    server.stop()
    try:
        assert wait_for(lambda: run.saw("store unavailable"), timeout=60), run.lines
        run.proc.send_signal(signal.SIGINT)
        time.sleep(1)
        assert run.proc.poll() is None
        run.proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        code = run.wait(timeout=120)
        took = time.monotonic() - t0
    finally:
        server.start()
    assert code == 4, run.lines
    assert took < 20, f"{took:.1f} s from the second signal to the exit"
    assert run.saw("aborted: cleanup did not finish") and run.saw("harness run --resume")
    assert not run.saw("Traceback")
