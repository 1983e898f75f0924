"""Shared fixtures: temporary stores, suite writers, a CLI runner and a real PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def run_cli(
    *args: str,
    cwd: Path | None = None,
    timeout: float = 300,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """Run `harness ARGS` in a subprocess, as a user would."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full_env.pop("HARNESS_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


def in_parallel(*calls: Callable[[], T]) -> list[T]:
    """Run independent calls at the same time and return their results in order.

    For CLI runs that share nothing (own store, own sandboxes): one waiting on Docker or on a
    subprocess leaves the CPU to the other, so the test takes the longer one's time instead
    of the sum. An exception in any call is raised here."""
    with ThreadPoolExecutor(max_workers=len(calls) or 1) as pool:
        futures = [pool.submit(call) for call in calls]
        return [f.result() for f in futures]


def write_suite(
    directory: Path,
    *,
    task_list: list[dict] | None = None,
    n_tasks: int = 4,
    n_clusters: int = 2,
    **suite: object,
) -> Path:
    """Write a small answer-only suite (and its task file) into ``directory``; task i is in
    cluster ``c{i % n_clusters}``."""
    directory.mkdir(parents=True, exist_ok=True)
    tasks = task_list
    if tasks is None:
        tasks = [
            {
                "id": f"t{i}",
                "instruction": f"What is {i} + {i}?",
                "cluster": f"c{i % n_clusters}",
                "graders": [{"type": "answer_match", "mode": "numeric", "expected": 2 * i}],
                "solution": {"answer": str(2 * i)},
            }
            for i in range(n_tasks)
        ]
    (directory / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    doc = {
        "name": "test-suite",
        "seed": 1,
        "trials": 2,
        "tasks": ["tasks.yaml"],
        "arms": [
            {"name": "base", "agent": "simulated", "params": {"p": 0.5}},
            {"name": "cand", "agent": "oracle"},
        ],
        "sandbox": "local",
        "retries": {"max_attempts": 2, "backoff_s": 0},
    }
    doc.update(suite)
    path = directory / "suite.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def suite_writer():
    return write_suite


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A real PostgreSQL server on a temporary directory and port, for the whole session."""
    from tests.pgserver import ThrowawayPostgres, postgres_binaries

    if postgres_binaries() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL binaries (initdb, pg_ctl) are missing")
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) are not installed")
    server = ThrowawayPostgres()
    yield server.url
    server.close()


def bare_run(run_id: str, **fields: object):
    """A run row with placeholder values, for tests that write trial rows by hand."""
    from harness.store import Run, now

    values: dict[str, object] = {
        "suite_name": "s",
        "suite_path": "s.yaml",
        "config_hash": "h" * 64,
        "harness_version": "0",
        "config": {},
        "seed": 1,
        "trials_per_task": 1,
        "arms": ["a"],
        "sandbox": "local",
        "started_at": now(),
    }
    return Run(id=run_id, **{**values, **fields})


def count_trials(db: Path) -> int:
    """Trials in a SQLite store so far, polled the way a user does while a run writes it:
    a plain connection (which creates the file when the run has not yet), opened and closed.
    No process's access may cost the run a write (``tests/faults/test_store_concurrency.py``)."""
    import contextlib
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return conn.execute("SELECT count(*) FROM trials").fetchone()[0]
    except sqlite3.OperationalError:  # no trials table yet
        return 0


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def require_docker() -> None:
    """Skip (or, under CI=true, fail) unless a Docker daemon answers."""
    from harness.sandbox.docker import docker_available

    if not docker_available():
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Docker daemon answers", pytrace=False)
        pytest.skip("no Docker daemon answers (start one: bash docker/ci-setup.sh)")


@pytest.fixture
def docker_ready() -> None:
    require_docker()


def trial_page(db: Path, trial_id: int) -> str:
    """A stored trial's page in `harness view`, rendered from the SQLite store ``db``."""
    from harness.store import Store
    from harness.viewer.trial_page import render_trial

    store = Store(f"sqlite:///{db}")
    try:
        return render_trial(store, trial_id) or ""
    finally:
        store.close()
