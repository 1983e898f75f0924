"""No process's access to a store costs another process's writes.

A seeded sample of ``benchmarks/store_concurrency.py`` (whose 100-iteration series is the
measured figure): real ``harness run`` processes while ``harness report``, ``harness runs``,
``harness view`` serving pages, a second ``harness run`` and a plain connection opening and
closing in a loop all touch the same store. Before the fix (``_read_only_sqlite`` opened and
closed the database file on every ``Store()``, dropping the process's SQLite locks) every
SQLite iteration failed: runs exited 5, stores lost rows, runs stayed ``running``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import uuid

import pytest

from benchmarks.store_concurrency import iteration
from harness.store import Store
from harness.store.engine import SQLITE_PRAGMAS
from tests.conftest import REPO, run_cli, write_suite

SEED = 29


def _failures(it) -> str:
    return f"seed {it.seed}: " + "; ".join(it.problems)


@pytest.mark.parametrize("i", range(3))
def test_sqlite_store_keeps_every_trial_under_concurrent_access(i, tmp_path):
    it = iteration("sqlite", SEED * 1000 + i, f"sqlite:///{tmp_path / 'store.db'}", tmp_path)
    assert it.ok, _failures(it)
    assert it.exits[("run", 0)] == 2


@pytest.fixture
def fresh_database(postgres_url):
    import psycopg

    admin = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    name = f"c_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.parametrize("i", range(2))
def test_postgres_store_keeps_every_trial_under_concurrent_access(i, fresh_database, tmp_path):
    it = iteration("postgresql", SEED * 1000 + 500 + i, fresh_database, tmp_path)
    assert it.ok, _failures(it)
    assert it.exits[("run", 0)] == 2


def test_opening_a_store_never_opens_its_file_outside_sqlite(tmp_path):
    """A writer's locks survive any number of other ``Store()`` opens in its process: a
    plain connection elsewhere closing cannot then checkpoint and delete the WAL under it."""
    db = tmp_path / "s.db"
    writer = Store(f"sqlite:///{db}")
    with writer.engine.connect() as conn:  # holds the WAL open, as a run's pool does
        conn.exec_driver_sql("SELECT count(*) FROM runs").fetchall()
        for _ in range(3):
            Store(f"sqlite:///{db}").close()
        # Another process reads and closes: not the last connection, so the WAL stays.
        reader = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM runs'); c.close()"
        subprocess.run([sys.executable, "-c", reader, str(db)], check=True)
        assert (tmp_path / "s.db-wal").exists()
    writer.close()


def test_sqlite_settings_are_the_documented_ones(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    with contextlib.closing(store.engine.raw_connection()) as raw:
        cur = raw.cursor()
        got = {p: cur.execute(p.split("=")[0]).fetchone()[0] for p in SQLITE_PRAGMAS}
    assert got == {
        "PRAGMA journal_mode=WAL": "wal",
        "PRAGMA synchronous=NORMAL": 1,
        "PRAGMA wal_autocheckpoint=1000": 1000,
        "PRAGMA journal_size_limit=67108864": 67108864,
        "PRAGMA foreign_keys=ON": 1,
    }
    text = (REPO / "docs" / "store.md").read_text(encoding="utf-8")
    for documented in ("WAL", "busy timeout", "30 s", "wal_autocheckpoint", "synchronous=NORMAL"):
        assert documented in text, documented


def test_view_pages_of_a_run_whose_arm_has_no_trial_yet(tmp_path):
    """Mid-run, an arm may have no finished trial: its run page still renders (it was a 500)."""
    from harness.viewer.server import run_page

    db = tmp_path / "s.db"
    suite = write_suite(tmp_path / "s", n_tasks=3)
    assert run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q").returncode == 0
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM trials WHERE arm = 'cand'")
        conn.execute("UPDATE runs SET status = 'running'")
    store = Store(f"sqlite:///{db}")
    run = store.latest_run()
    assert run is not None
    page = run_page(store.url, run)
    assert "cand" in page and "base" in page
