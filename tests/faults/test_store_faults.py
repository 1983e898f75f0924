"""Store faults are fast and honest: a full disk stops a run in seconds (exit 5, run marked
failed, finished trials kept); a read-only store is still reported; a malformed database is
one line and exit 5; a run's owner is respected on resume; a run whose process was killed shows
as interrupted with its resume command; signals at start-up exit 4."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import yaml

from harness.store import Store
from tests.conftest import REPO, in_parallel, run_cli, write_suite

DEMO = REPO / "tasks" / "demo" / "suite.yaml"


def _popen(*args: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HARNESS_STORE", None)
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _tmpfs(tmp_path, size: str):
    """A real file system of ``size`` (tmpfs), unmounted afterwards."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.fixture
def tiny_fs(tmp_path):
    """1 MiB: a run of 300 trials fills it."""
    yield from _tmpfs(tmp_path, "1m")


@pytest.fixture
def small_fs(tmp_path):
    """4 MiB: room for a small run's store and its WAL (a SQLite file on a real mount)."""
    yield from _tmpfs(tmp_path, "4m")


def _runs(db: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT id, status FROM runs").fetchall()


def test_disk_full_stops_the_run_within_seconds(tiny_fs, tmp_path):
    db = tiny_fs / "h.db"
    proc = _popen("run", str(DEMO), "--trials", "300", "--store", f"sqlite:///{db}", cwd=tmp_path)
    full_at = None
    while proc.poll() is None:  # when the file system is all but full (an upper bound)
        st = os.statvfs(tiny_fs)
        if full_at is None and st.f_bavail * st.f_frsize < 128 * 1024:
            full_at = time.monotonic()
        time.sleep(0.005)
    exited_at = time.monotonic()
    err = proc.stderr.read()
    assert proc.returncode == 5, err
    assert full_at is not None, err
    print(f"disk full: exit {exited_at - full_at:.2f} s after 128 KiB were left")
    assert err.strip().splitlines()[-1].startswith("error: store write failed"), err
    assert "Traceback" not in err
    [(_, status)] = _runs(db)
    assert status == "failed"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT count(*) FROM trials").fetchone()[0] > 0  # kept
    assert not list(tiny_fs.glob("h.db.reserve-*"))


def test_read_only_store_is_reported(small_fs, tmp_path):
    db = small_fs / "h.db"
    suite = write_suite(tmp_path / "s", n_tasks=3)
    assert run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q").returncode == 0
    remount = ["mount", "-o", "remount,ro", str(small_fs)]
    assert subprocess.run(remount, capture_output=True).returncode == 0
    reads = (["report"], ["report", "--json"], ["runs"], ["history", "test-suite"])
    # nothing can write to a read-only mount, so the readers go at the same time
    results = in_parallel(
        *(partial(run_cli, *args, "--store", f"sqlite:///{db}") for args in reads)
    )
    for args, result in zip(reads, results, strict=True):
        assert result.returncode == 0, (args, result.stderr)
    result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    assert result.returncode == 5 and "read-only" in result.stderr


@pytest.mark.parametrize("command", [["report"], ["runs"], ["gate", "latest"], ["history", "x"]])
def test_malformed_database_is_one_line_exit_5(command, tmp_path):
    db = tmp_path / "bad.db"
    db.write_bytes(b"this is not a database, " * 100)
    result = run_cli(*command, "--store", f"sqlite:///{db}")
    assert result.returncode == 5, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a database" in lines[0], result.stderr


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_owner_gone_shows_interrupted_and_a_live_owner_refuses_a_resume(tmp_path):
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    suite = write_suite(tmp_path / "s", n_tasks=3)
    assert run_cli("run", str(suite), "--store", url, "-q").returncode == 0
    run_id = _runs(db)[0][0]
    with sqlite3.connect(db) as conn:  # as a SIGKILLed owner leaves it
        conn.execute("UPDATE runs SET status='running', pid=?", (_dead_pid(),))
        conn.execute("DELETE FROM trials WHERE id IN (SELECT id FROM trials LIMIT 2)")
    listed = run_cli("runs", "--store", url, env={"COLUMNS": "80"})
    assert "interrupted" in listed.stdout
    assert f"harness run --resume {run_id}" in listed.stdout.replace("\n", "")
    js = yaml.safe_load(run_cli("runs", "--json", "--store", url).stdout)
    assert js[0]["status"] == "interrupted" and js[0]["recorded_status"] == "running"

    owner = subprocess.Popen(["sleep", "60"])  # a live process owns the run
    try:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE runs SET pid=?", (owner.pid,))
        refused = run_cli("run", "--resume", run_id, "--store", url, "-q")
        assert refused.returncode == 5, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and str(owner.pid) in lines[0], refused.stderr
    finally:
        owner.kill()
        owner.wait()
    resumed = run_cli("run", "--resume", run_id, "--store", url, "-q")  # owner gone: resumes
    assert resumed.returncode == 0, resumed.stderr
    assert _runs(db)[0][1] == "finished"


def test_only_one_claim_of_a_run_wins(tmp_path):
    url = f"sqlite:///{tmp_path}/s.db"
    suite = write_suite(tmp_path / "s", n_tasks=2)
    assert run_cli("run", str(suite), "--store", url, "-q").returncode == 0
    store = Store(url)
    run = store.list_runs()[0]
    first = store.claim_run(run.id, 111, "h", run.pid, run.host)
    second = store.claim_run(run.id, 222, "h", run.pid, run.host)
    assert (first, second) == (True, False)
    assert store.get_run(run.id).pid == 111


def _wait_for_handlers(proc: subprocess.Popen) -> None:
    """Until harness catches SIGTERM (its first statement does). Before that the Python
    interpreter itself is starting up, which no program can make answer a signal."""
    status = Path(f"/proc/{proc.pid}/status")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        caught = next(
            (ln.split()[1] for ln in status.read_text().splitlines() if ln.startswith("SigCgt")),
            "0",
        )
        if int(caught, 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.005)
    raise AssertionError("harness never installed its signal handlers")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("delay", [0.0, 0.3, 1.0])
def test_signal_during_start_up_exits_4_with_one_line(sig, delay, tmp_path):
    proc = _popen(
        "run",
        str(DEMO),
        "--trials",
        "20",
        "--store",
        f"sqlite:///{tmp_path}/s.db",
        "-q",
        cwd=tmp_path,
    )
    _wait_for_handlers(proc)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 4, err
    assert "Traceback" not in err
    assert "interrupted" in err and ("--resume" in err or "nothing to resume" in err), err
