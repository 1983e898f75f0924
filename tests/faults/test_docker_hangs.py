"""Every wait on Docker has a bound: a container frozen mid-exec, or a daemon that stops
answering for one container, costs its trial at most the budget plus the stated limits
(``harness.sandbox.docker_calls``), and the run ends with the right exit code; what could
not be removed is left for ``harness gc``. Only this test's own containers are touched
(found by their run's label)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness.sandbox.docker_calls import LIMITS
from tests.conftest import REPO, run_cli, wait_for
from tests.faults.stalling_docker import StallingDocker

MARKER = "harness-hang-marker"
BUDGET_S = 8.0


def _suite(tmp: Path, **extra: object) -> Path:
    tasks = [
        {
            "id": "hang",
            "environment": "shell",
            "instruction": "Say x.",
            "graders": [{"type": "answer_match", "mode": "exact", "expected": "x"}],
            "solution": {"commands": [f"echo {MARKER}; sleep 40"], "answer": "x"},
        }
    ]
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    suite = {
        "name": "docker-hangs",
        "seed": 3,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "environments_dir": str(REPO / "environments"),
        "arms": [{"name": "oracle", "agent": "oracle"}],
        "sandbox": "docker",
        "budgets": {"timeout_s": BUDGET_S},
        "retries": {"max_attempts": 2, "backoff_s": 0.2},
        **extra,
    }
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite))
    return tmp / "suite.yaml"


def _start(suite: Path, db: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HARNESS_STORE", None)
    cmd = [sys.executable, "-m", "harness.cli", "run", str(suite), "--store", f"sqlite:///{db}"]
    return subprocess.Popen(
        [*cmd, "-q"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _run_id(db: Path) -> str | None:
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(db)) as conn:
        row = conn.execute("SELECT id FROM runs").fetchone()
        return row[0] if row else None
    return None


def _containers(run_id: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", "--filter", f"label=harness.run={run_id}"],
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def _attempts(db: Path) -> list[tuple[int, str]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT attempt, outcome FROM attempts ORDER BY id").fetchall()


def _freezer(cid: str) -> tuple[Path, str, str] | None:
    """(control file, frozen value, thawed value) of a container's cgroup freezer."""
    for path, frozen, thawed in (
        (Path(f"/sys/fs/cgroup/freezer/docker/{cid}/freezer.state"), "FROZEN", "THAWED"),
        (Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cgroup.freeze"), "1", "0"),
        (Path(f"/sys/fs/cgroup/docker/{cid}/cgroup.freeze"), "1", "0"),
    ):
        if path.exists():
            return path, frozen, thawed
    return None


def _marker_running(cid: str) -> bool:
    top = subprocess.run(["docker", "top", cid, "-eo", "pid,args"], capture_output=True, text=True)
    return "sleep 40" in top.stdout


@pytest.mark.slow
def test_container_frozen_mid_exec_ends_the_run_within_budget_and_bound(tmp_path, docker_ready):
    if os.geteuid() != 0:
        pytest.skip("freezing a container's cgroup needs root")
    db = tmp_path / "h.db"
    proc = _start(_suite(tmp_path), db)
    run_id, frozen = None, None
    try:
        assert wait_for(lambda: _run_id(db) is not None, timeout=300), "no run row"
        run_id = _run_id(db)
        assert run_id is not None
        assert wait_for(lambda: bool(_containers(run_id)), timeout=300), "no container"
        cid = _containers(run_id)[0]
        assert wait_for(lambda: _marker_running(cid), timeout=120), "the command never ran"
        found = _freezer(cid)
        assert found is not None, "no freezer for the container's cgroup"
        frozen = (found[0], found[2])
        found[0].write_text(found[1])
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=600)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
        if frozen is not None and frozen[0].exists():
            frozen[0].write_text(frozen[1])
        for leftover in _containers(run_id) if run_id else []:
            subprocess.run(["docker", "rm", "-f", leftover], capture_output=True)
    bound = BUDGET_S + LIMITS["exec"] + LIMITS["restart"] + LIMITS["remove"]
    print(f"frozen container -> run exit: {took:.1f} s (budget {BUDGET_S:g} s, bound {bound:g} s)")
    assert proc.returncode in (0, 3), err
    assert "Traceback" not in err
    assert took <= bound, err
    assert _attempts(db), "the trial left no attempt row"


@pytest.mark.slow
def test_daemon_silent_for_a_container_costs_its_trial_a_bounded_wait(tmp_path, docker_ready):
    sock = Path(f"/tmp/hx-stall-{os.getpid()}.sock")  # short: unix socket paths are limited
    sock.unlink(missing_ok=True)
    db = tmp_path / "h.db"
    with StallingDocker(sock, MARKER) as daemon:
        suite = _suite(tmp_path, sandbox_options={"base_url": daemon.url})
        t0 = time.monotonic()
        proc = _start(suite, db)
        try:
            assert wait_for(lambda: daemon.target is not None, timeout=300), "no marked exec"
            stalled_at = time.monotonic()
            _, err = proc.communicate(timeout=600)
            took = time.monotonic() - stalled_at
        finally:
            if proc.poll() is None:
                proc.kill()
    run_id = _run_id(db)
    assert run_id is not None
    target = daemon.target
    assert target is not None
    # The stalled trial's attempt: budget, then one exec limit (the end-of-turn sweep) marks
    # the container unresponsive, one removal limit abandons it; the retry then runs clean.
    bound = BUDGET_S + LIMITS["exec"] + LIMITS["remove"] + BUDGET_S + 60
    print(f"daemon silent for one container -> run exit: {took:.1f} s (bound {bound:g} s)")
    with contextlib.closing(sqlite3.connect(db)) as conn:
        for row in conn.execute(
            "SELECT attempt, outcome, started_at, finished_at, error FROM attempts"
        ):
            print("attempt", row[:4], (row[4] or "")[:200])
    try:
        assert proc.returncode in (0, 3), err
        assert "Traceback" not in err
        assert took <= bound, err
        assert "harness gc" in err, err  # the abandoned container is named for gc
        assert [o for _, o in _attempts(db)][:1] == ["infra_error"], _attempts(db)
        left = _containers(run_id)
        assert target in left  # really left behind, and really running: now gc removes it
        gc = run_cli("gc")
        assert gc.returncode == 0, gc.stderr
        assert target not in _containers(run_id)
    finally:
        for leftover in _containers(run_id):
            subprocess.run(["docker", "rm", "-f", leftover], capture_output=True)
        sock.unlink(missing_ok=True)
    print(f"t0 to exit: {time.monotonic() - t0:.1f} s")
