"""The Docker rows of the reliability table: a trial's container killed (``docker kill``)
mid-attempt, and a container's cgroup frozen mid-exec. Each faulted run is compared row by
row with an uninterrupted run of the same seed. Only this run's containers are touched
(found by the run's ``harness.run`` label), never any other container on the machine.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

import yaml

from benchmarks.reliability import (
    REPO,
    Row,
    _compare,
    _harness,
    _rows,
    _run_id,
    compared_row,
)

# The hanging task and the freezer's files, as the test of the same fault has them.
from tests.faults.test_docker_hangs import _freezer, _marker_running
from tests.faults.test_docker_hangs import _suite as hang_suite


def _containers(run_id: str) -> list[str]:
    """Running containers of one run (its label), never anyone else's."""
    out = subprocess.run(
        ["docker", "ps", "-q", "--no-trunc", "--filter", f"label=harness.run={run_id}"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return sorted(out.split())


def _remove_left(run_id: str | None) -> None:
    if not run_id:
        return
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=harness.run={run_id}"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    if out:
        subprocess.run(["docker", "rm", "-f", *out], capture_output=True, timeout=120)


def _demo_suite(root: Path, n_tasks: int, trials: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    tasks = yaml.safe_load((REPO / "tasks/demo/tasks.yaml").read_text())
    tasks["tasks"] = tasks["tasks"][:n_tasks]
    (root / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    suite = {
        "name": "reliability-docker",
        "seed": 11,
        "trials": trials,
        "tasks": ["tasks.yaml"],
        "environments_dir": str(REPO / "environments"),
        "concurrency": 2,
        "arms": [{"name": "sim", "agent": "simulated", "params": {"p": 0.6, "delay_s": 0.5}}],
        "sandbox": "docker",
        "retries": {"max_attempts": 8, "backoff_s": 0.2},
    }
    (root / "suite.yaml").write_text(yaml.safe_dump(suite))
    return root / "suite.yaml"


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def docker_kill(work: Path, kills: int, seed: int, n_tasks: int = 12) -> Row:
    """``kills`` containers of a Docker run killed at seeded moments: every trial still has
    exactly one final row and the reference's verdict; each kill is one retried attempt."""
    suite = _demo_suite(work / "dkill", n_tasks, trials=2)
    clean = work / "dkill-clean.db"
    exits = [_harness("run", str(suite), "--store", f"sqlite:///{clean}", "-q").wait()]
    db = work / "dkill.db"
    proc = _harness("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    rng = random.Random(seed)
    done, run_id = 0, None
    try:
        _wait(lambda: _run_id(db) is not None or proc.poll() is not None, 300)
        run_id = _run_id(db)
        while run_id and done < kills and proc.poll() is None:
            time.sleep(rng.uniform(0.5, 3.0))
            live = _containers(run_id)
            if not live:
                continue
            victim = rng.choice(live)
            if subprocess.run(["docker", "kill", victim], capture_output=True).returncode == 0:
                done += 1
        exits.append(proc.wait(timeout=900))
    finally:
        if proc.poll() is None:
            proc.kill()
        _remove_left(run_id)
    return compared_row("docker_kill", 2 * n_tasks, exits, db, clean, kills=done)


def docker_pause(work: Path, budget_s: float = 8.0) -> Row:
    """A container's cgroup frozen while its exec runs (the kernel freezer, as ``docker
    pause`` does, without asking dockerd): the run ends within the trial's budget plus the
    Docker call limits, with the reference's verdict."""
    from harness.sandbox.docker_calls import LIMITS

    bound = budget_s + float(LIMITS["exec"] or 0) + float(LIMITS["restart"] or 0)
    bound += float(LIMITS["remove"] or 0)
    row = Row("docker_pause", trials=1)
    if os.geteuid() != 0:
        row.detail = {"skipped": "freezing a container's cgroup needs root"}
        return row
    (work / "freeze").mkdir(parents=True, exist_ok=True)
    suite = hang_suite(work / "freeze", budgets={"timeout_s": budget_s})
    clean = work / "freeze-clean.db"
    exits = [_harness("run", str(suite), "--store", f"sqlite:///{clean}", "-q").wait()]
    db = work / "freeze.db"
    proc = _harness("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    run_id, thaw, took = None, None, None
    try:
        _wait(lambda: _run_id(db) is not None, 300)
        run_id = _run_id(db)
        if run_id and _wait(lambda: bool(_containers(run_id)), 300):
            cid = _containers(run_id)[0]
            found = _freezer(cid) if _wait(lambda: _marker_running(cid), 120) else None
            if found is not None:
                thaw = (found[0], found[2])
                found[0].write_text(found[1])
                t0 = time.monotonic()
                proc.wait(timeout=900)
                took = round(time.monotonic() - t0, 1)
        exits.append(proc.wait(timeout=900))
    finally:
        if proc.poll() is None:
            proc.kill()
        if thaw is not None and thaw[0].exists():
            thaw[0].write_text(thaw[1])
        _remove_left(run_id)
    row.exits = exits
    row.detail = {
        "frozen": took is not None,
        "seconds_freeze_to_exit": took,
        "bound_s": bound,
        "within_bound": took is not None and took <= bound,
    }
    return _compare(row, _rows(f"sqlite:///{db}"), _rows(f"sqlite:///{clean}"))
