"""Store round trip on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import re
import sqlite3

import pytest

from harness.analysis.load import load_run_table
from harness.store import SCHEMA_VERSION, Attempt, Run, Store, TrajectoryEvent, Trial, now


def _roundtrip(url: str) -> None:
    store = Store(url)
    assert store.migrate() == SCHEMA_VERSION  # idempotent
    run = Run(
        id="r1",
        suite_name="s",
        suite_path="s.yaml",
        config_hash="h" * 64,
        harness_version="0",
        config={"suite": {"name": "s"}},
        seed=7,
        trials_per_task=2,
        arms=["a", "b"],
        sandbox="local",
        image_ids={"env": "sha256:abc"},
        jobs_planned=4,
        started_at=now(),
    )
    store.create_run(run)
    trial = Trial(
        run_id="r1",
        arm="a",
        task_id="t1",
        trial_index=0,
        seed=123456789012345,
        cluster="c",
        task_class="k",
        status="passed",
        passed=True,
        score=1.0,
        evidence={"graders": [{"grader": "answer_match", "passed": True}]},
        tokens_in=10,
        tokens_out=5,
        cost_usd=None,
        latency_s=0.5,
        steps=2,
        image_id="sha256:abc",
        attempts=2,
        started_at=now(),
        finished_at=now(),
    )
    attempts = [
        Attempt(
            run_id="r1",
            arm="a",
            task_id="t1",
            trial_index=0,
            attempt=1,
            outcome="infra_error",
            error="daemon gone",
            started_at=now(),
            finished_at=now(),
        ),
        Attempt(
            run_id="r1",
            arm="a",
            task_id="t1",
            trial_index=0,
            attempt=2,
            outcome="ok",
            started_at=now(),
            finished_at=now(),
        ),
    ]
    events = [
        TrajectoryEvent(
            trial_id=0,
            step=0,
            kind="tool_call",
            tool="find_user",
            args={"email": "x@y"},
            content="{}",
            blob_ref="f" * 64,
        )
    ]
    tid = store.write_trial(trial, attempts, events, {"f" * 64: b"\x00full result\xff"})
    got = store.trial(tid)
    assert got.seed == 123456789012345 and got.cost_usd is None and got.passed is True
    assert got.evidence["graders"][0]["grader"] == "answer_match"
    assert [e.tool for e in store.events(tid)] == ["find_user"]
    assert store.events(tid)[0].args == {"email": "x@y"}
    assert [a.outcome for a in store.attempts("r1")] == ["infra_error", "ok"]
    assert store.blob("f" * 64) == b"\x00full result\xff"
    assert store.finished_keys("r1") == {("a", "t1", 0, "")}
    store.update_run("r1", status="finished", finished_at=now())
    assert store.get_run("r1").status == "finished"
    assert store.latest_run().id == "r1"
    assert store.get_run("r1").image_ids == {"env": "sha256:abc"}
    table = load_run_table(store, "r1").trials
    assert table.arm.values().tolist() == ["a"] and table.passed.tolist() == [True]
    # one final row per trial: a duplicate is refused by the database
    dup = trial.model_copy(update={"id": None})
    with pytest.raises(Exception):  # noqa: B017 - IntegrityError differs per driver
        store.write_trial(Trial.model_validate(dup.model_dump()))
    store.close()


def test_sqlite_roundtrip(tmp_path):
    _roundtrip(f"sqlite:///{tmp_path / 'h.db'}")


def test_v1_store_gains_malformed_tool_calls(tmp_path):
    """A store made before ``trials.malformed_tool_calls`` existed is migrated in place."""
    path = tmp_path / "old.db"
    Store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:  # roll the file back to schema version 1
        conn.execute("ALTER TABLE trials DROP COLUMN malformed_tool_calls")
        conn.execute("ALTER TABLE trials DROP COLUMN failure_kind")
        conn.execute("ALTER TABLE trials DROP COLUMN task_image_id")
        conn.execute("DELETE FROM schema_version WHERE version > 1")
    store = Store(f"sqlite:///{path}")
    assert store.migrate() == SCHEMA_VERSION
    with sqlite3.connect(path) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(trials)")}
    assert {"malformed_tool_calls", "failure_kind", "task_image_id"} <= columns
    store.close()


TOKENS = ("tokens_in", "tokens_cached", "tokens_out")


def _back_to_v2_sqlite(path) -> None:
    """Rebuild ``trials`` as schema v2 made it (token columns NOT NULL), rows kept."""
    with sqlite3.connect(path) as conn:  # foreign keys off: plain sqlite3 default
        ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'trials'").fetchone()[0]
        for name in TOKENS:  # the column itself, not judge_tokens_in (added later, by v9)
            ddl = re.sub(rf"(?<![a-z_]){name} INTEGER,", f"{name} INTEGER NOT NULL,", ddl)
        assert ddl.count("NOT NULL,") >= 3
        indexes = [
            sql
            for (sql,) in conn.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'trials' AND type = 'index' "
                "AND sql IS NOT NULL"
            )
        ]
        conn.execute("ALTER TABLE trials RENAME TO t_old")
        for name in TOKENS:  # v2 stored 0 where a field was left out
            conn.execute(f"UPDATE t_old SET {name} = COALESCE({name}, 0)")
        conn.execute(ddl)
        conn.execute("INSERT INTO trials SELECT * FROM t_old")
        conn.execute("DROP TABLE t_old")
        for sql in indexes:
            conn.execute(sql)
        conn.execute("DELETE FROM schema_version WHERE version > 2")


def _back_to_v2_postgres(url: str) -> None:
    store = Store(url)
    with store.engine.begin() as conn:
        for name in TOKENS:
            conn.exec_driver_sql(f"UPDATE trials SET {name} = COALESCE({name}, 0)")
            conn.exec_driver_sql(f"ALTER TABLE trials ALTER COLUMN {name} SET NOT NULL")
        conn.exec_driver_sql("DELETE FROM schema_version WHERE version > 2")
    store.close()


def _nullable_tokens(store: Store) -> bool:
    from sqlalchemy import inspect

    columns = {c["name"]: c for c in inspect(store.engine).get_columns("trials")}
    return all(columns[name]["nullable"] for name in TOKENS)


def _v2_store_gains_unknown_tokens(url: str, roll_back) -> None:
    """A store whose token columns are NOT NULL (schema 2) opens, migrates to nullable
    columns and keeps every row, its trajectory and the link between them."""
    _roundtrip(url)
    roll_back()
    store = Store(url)
    assert store.migrate() == SCHEMA_VERSION and _nullable_tokens(store)
    with store.engine.connect() as conn:
        (tid, tokens_in) = conn.exec_driver_sql("SELECT id, tokens_in FROM trials").one()
    assert tokens_in == 10 and [e.tool for e in store.events(tid)] == ["find_user"]
    quiet = store.trial(tid).model_copy(update={"id": None, "trial_index": 1})
    row = quiet.model_dump() | {"tokens_in": None, "tokens_cached": None, "tokens_out": None}
    new = store.write_trial(
        Trial.model_validate(row),
        [],
        [TrajectoryEvent(trial_id=0, step=0, kind="message", content="hi")],
    )
    got = store.trial(new)
    assert (got.tokens_in, got.tokens_cached, got.tokens_out) == (None, None, None)
    assert [e.content for e in store.events(new)] == ["hi"]
    store.close()


def test_v2_sqlite_store_gains_unknown_tokens(tmp_path):
    path = tmp_path / "v2.db"
    _v2_store_gains_unknown_tokens(f"sqlite:///{path}", lambda: _back_to_v2_sqlite(path))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
        ddl = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'trajectory_events'"
        ).fetchone()[0]
    assert not any(n.startswith("_v3_old") for n in names)
    assert {"ix_trials_run_id", "ix_trajectory_events_trial_id"} <= names
    assert "REFERENCES trials" in ddl


@pytest.mark.postgres
def test_v2_postgres_store_gains_unknown_tokens(postgres_url):
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    url = make_url(postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # a database of its own: the others share run ids
        conn.exec_driver_sql("DROP DATABASE IF EXISTS v2_tokens")
        conn.exec_driver_sql("CREATE DATABASE v2_tokens")
    admin.dispose()
    own = url.set(database="v2_tokens").render_as_string(hide_password=False)
    _v2_store_gains_unknown_tokens(own, lambda: _back_to_v2_postgres(own))


def test_misspelt_trial_field_is_refused(tmp_path):
    """A dict row with a key the table lacks is an error, not a silently dropped column."""
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    row = {"run_id": "r", "arm": "a", "task_id": "t", "trial_index": 0, "seed": 1}
    row |= {"cluster": "c", "task_class": "k", "status": "failed", "harm": 3.0}
    row |= {"started_at": now(), "finished_at": now()}
    with pytest.raises(ValueError, match="harm"):
        store.write_trial(row)
    with pytest.raises(ValueError, match="not fields the run table can load: harm_severity"):
        load_run_table(store, "r", ["harm_severity"])
    store.close()


@pytest.mark.postgres
def test_postgres_roundtrip(postgres_url):
    _roundtrip(postgres_url)


@pytest.mark.postgres
def test_demo_run_into_postgres(postgres_url, tmp_path, cli, suite_writer):
    suite = suite_writer(tmp_path, trials=2)
    result = cli("run", str(suite), "--store", postgres_url, "-q")
    assert result.returncode == 0, result.stderr
    report = cli("report", "--json", "--store", postgres_url)
    assert report.returncode == 0, report.stderr
    assert '"trials_completed": 8' in report.stdout
