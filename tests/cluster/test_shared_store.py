"""PostgreSQL as the shared store of a team: migrations raced by processes starting together,
two `harness run` processes writing one database at once, shared blobs, pool sizing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import REPO  # noqa: E402

pytestmark = pytest.mark.postgres

_RACE = """
import sys, time
from harness.store import Store
start = float(sys.argv[2])
while time.time() < start:
    pass
Store(sys.argv[1]).close()
"""


def _env() -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HARNESS_STORE", None)
    return env


def _spawn(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _sql(url: str, query: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        return conn.execute(query).fetchall()


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_migrating_an_empty_database_at_once(fresh_pg, processes):
    import time

    start = time.time() + 3.0  # every process is past its imports by then
    procs = [_spawn(["-c", _RACE, fresh_pg, str(start)]) for _ in range(processes)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert all(code == 0 for code, _ in results), [err[-1500:] for _, err in results]
    # Every migration applied exactly once, however many processes raced to apply it.
    from harness.store.migrations import MIGRATIONS

    expected = [(version,) for version, _ in MIGRATIONS]
    assert _sql(fresh_pg, "SELECT version FROM schema_version ORDER BY version") == expected
    tables = {r[0] for r in _sql(fresh_pg, "SELECT tablename FROM pg_tables")}
    assert {"runs", "trials", "attempts", "trajectory_events", "blobs"} <= tables


def test_two_runs_write_one_database_at_once(fresh_pg, tmp_path, suite_writer):
    suites = [
        suite_writer(tmp_path / name, trials=6, n_tasks=5, concurrency=4, seed=seed)
        for name, seed in (("a", 1), ("b", 2))
    ]
    procs = [
        _spawn(["-m", "harness.cli", "run", str(s), "--store", fresh_pg, "-q"]) for s in suites
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert all(code == 0 for code, _ in results), [err[-1500:] for _, err in results]

    runs = _sql(fresh_pg, "SELECT id, status, jobs_planned, seed FROM runs ORDER BY seed")
    assert len(runs) == 2 and {r[1] for r in runs} == {"finished"}
    for run_id, _status, planned, _seed in runs:
        assert planned == 2 * 5 * 6
        rows = _sql(
            fresh_pg,
            f"SELECT arm, task_id, trial_index, variant, seed FROM trials WHERE run_id = '{run_id}'",
        )
        assert len(rows) == planned == len({r[:4] for r in rows})  # exactly its rows, once
        attempts = _sql(fresh_pg, f"SELECT count(*) FROM attempts WHERE run_id = '{run_id}'")
        assert attempts == [(planned,)]
    # the seeds are each run's own: the two runs' trial seeds differ
    seeds = [
        {r[0] for r in _sql(fresh_pg, f"SELECT seed FROM trials WHERE run_id = '{rid}'")}
        for rid, *_ in runs
    ]
    assert seeds[0] != seeds[1]


_BLOBS = """
import sys, time
from datetime import UTC, datetime
from harness.store import Store
from harness.store.tables import Run, Trial
url, who, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
store = Store(url)
now = datetime.now(UTC)
store.create_run(Run(id=who, suite_name="s", suite_path="s.yaml", config_hash="h",
    harness_version="0", config={}, overrides={}, seed=0, trials_per_task=1, arms=["a"],
    sandbox="local", image_ids={}, jobs_planned=40, started_at=now))
while time.time() < start:
    pass
for i in range(40):
    trial = Trial(run_id=who, arm="a", task_id=f"t{i}", trial_index=0, seed=i, cluster="c",
        task_class="k", status="passed", started_at=now, finished_at=now)
    store.write_trial(trial, blobs={f"sha-{i}": b"same bytes in both runs" * 100})
"""


def test_runs_sharing_blobs_write_at_once(fresh_pg):
    """Blobs are content-addressed and shared: two writers storing the same blob at the same
    moment both succeed, and it is stored once."""
    import time

    start = time.time() + 3.0
    procs = [_spawn(["-c", _BLOBS, fresh_pg, who, str(start)]) for who in ("r1", "r2")]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert all(code == 0 for code, _ in results), [err[-1500:] for _, err in results]
    assert _sql(fresh_pg, "SELECT count(*) FROM trials") == [(80,)]
    assert _sql(fresh_pg, "SELECT count(*) FROM blobs") == [(40,)]


def test_pool_sizing_from_the_url(fresh_pg):
    from harness.store import Store

    store = Store(f"{fresh_pg}?pool_size=2&max_overflow=1&pool_timeout=7")
    pool = store.engine.pool
    assert (pool.size(), pool._max_overflow, pool._timeout) == (2, 1, 7)
    assert "pool_size" not in str(store.engine.url)  # not passed on to the driver
    store.close()
