"""Schema migrations of the store: (version, function(connection)), applied in order by
``Store.migrate`` under its lock. Append; never edit an applied one."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from harness.store.tables import (
    AnchorFit,
    HumanLabel,
    InFlight,
    PairwiseJudgement,
    ReplacedLabel,
    TrajectoryEvent,
    Trial,
    table_of,
)


def _v1(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn)


def _v2(conn: Connection) -> None:
    """trials.malformed_tool_calls (a store made by v1 of today's tables already has it)."""
    if "malformed_tool_calls" not in {c["name"] for c in inspect(conn).get_columns("trials")}:
        conn.execute(
            text("ALTER TABLE trials ADD COLUMN malformed_tool_calls INTEGER NOT NULL DEFAULT 0")
        )


_TOKEN_COLUMNS = ("tokens_in", "tokens_cached", "tokens_out")


def _v3(conn: Connection) -> None:
    """trials.tokens_* become nullable (None: the model endpoint reported no usage).

    SQLite cannot drop a NOT NULL constraint in place: the table is rebuilt from today's
    declaration. ``trajectory_events`` references it, so it is rebuilt too (renaming
    ``trials`` first re-points that reference at the old copy; the copies are dropped child
    first), all inside the migration's transaction with foreign keys still enforced."""
    columns = {c["name"]: c for c in inspect(conn).get_columns("trials")}
    if all(columns[c]["nullable"] for c in _TOKEN_COLUMNS):
        return  # made by v1 of today's tables
    if conn.dialect.name != "sqlite":
        for name in _TOKEN_COLUMNS:
            conn.execute(text(f"ALTER TABLE trials ALTER COLUMN {name} DROP NOT NULL"))
        return
    tables = [table_of(Trial), table_of(TrajectoryEvent)]  # parent first
    for table in tables:
        for index in inspect(conn).get_indexes(table.name):
            conn.execute(text(f'DROP INDEX "{index["name"]}"'))
        conn.execute(text(f'ALTER TABLE "{table.name}" RENAME TO "_v3_old_{table.name}"'))
    for table in tables:
        table.create(conn)
        old = {c["name"] for c in inspect(conn).get_columns(f"_v3_old_{table.name}")}
        names = ", ".join(f'"{c.name}"' for c in table.columns if c.name in old)
        conn.execute(
            text(f'INSERT INTO "{table.name}" ({names}) SELECT {names} FROM "_v3_old_{table.name}"')
        )
    for table in reversed(tables):
        conn.execute(text(f'DROP TABLE "_v3_old_{table.name}"'))


def _v4(conn: Connection) -> None:
    """trials.failure_kind: why the agent failed, when it caused the failure (a store
    rebuilt by v3 from today's tables already has it)."""
    if "failure_kind" not in {c["name"] for c in inspect(conn).get_columns("trials")}:
        conn.execute(text("ALTER TABLE trials ADD COLUMN failure_kind VARCHAR"))


def _v5(conn: Connection) -> None:
    """trials.task_image_id: the environment's image under a ready-made agent's CLI image."""
    if "task_image_id" not in {c["name"] for c in inspect(conn).get_columns("trials")}:
        conn.execute(text("ALTER TABLE trials ADD COLUMN task_image_id VARCHAR"))


def _v6(conn: Connection) -> None:
    """trajectory_events.reported: the event is an agent program's own claim, not observed."""
    columns = {c["name"] for c in inspect(conn).get_columns("trajectory_events")}
    if "reported" not in columns:
        conn.execute(
            text("ALTER TABLE trajectory_events ADD COLUMN reported BOOLEAN NOT NULL DEFAULT false")
        )


def _v7(conn: Connection) -> None:
    """attempts.tokens_* and attempts.cost_usd: what each attempt spent, discarded ones
    included (NULL for attempts recorded before: their spend was not kept)."""
    columns = {c["name"] for c in inspect(conn).get_columns("attempts")}
    for name, kind in (*((c, "INTEGER") for c in _TOKEN_COLUMNS), ("cost_usd", "FLOAT")):
        if name not in columns:
            conn.execute(text(f"ALTER TABLE attempts ADD COLUMN {name} {kind}"))


def _v8(conn: Connection) -> None:
    """trials_in_flight: trials being run, so a resume sees the attempts a killed driver cut
    (a store made by v1 of today's tables already has it)."""
    table_of(InFlight).create(conn, checkfirst=True)


def _v9(conn: Connection) -> None:
    """trials.judge_*: what the trial's judges spent, apart from the agent; human_labels:
    people's labels of trials (a store made by v1 of today's tables already has both)."""
    columns = {c["name"] for c in inspect(conn).get_columns("trials")}
    added = (
        ("judge_calls", "INTEGER NOT NULL DEFAULT 0"),
        ("judge_tokens_in", "INTEGER"),
        ("judge_tokens_out", "INTEGER"),
        ("judge_cost_usd", "FLOAT"),
    )
    for name, kind in added:
        if name not in columns:
            conn.execute(text(f"ALTER TABLE trials ADD COLUMN {name} {kind}"))
    table_of(HumanLabel).create(conn, checkfirst=True)


def _v10(conn: Connection) -> None:
    """anchor_fits: the suites' stored 2PL fits (harness anchors fit)."""
    table_of(AnchorFit).create(conn, checkfirst=True)


def _v11(conn: Connection) -> None:
    """pairwise_judgements: a pairwise judge's verdicts on a run's pairs of trials."""
    table_of(PairwiseJudgement).create(conn, checkfirst=True)


def _v12(conn: Connection) -> None:
    """human_labels_replaced: people's earlier labels their newer ones replaced (history)."""
    table_of(ReplacedLabel).create(conn, checkfirst=True)


def _v13(conn: Connection) -> None:
    """pairwise_judgements.run_b: trial_b's run for judgements across runs (NULL within a
    run: every row stored before; a store made by v1 of today's tables already has it)."""
    if "run_b" not in {c["name"] for c in inspect(conn).get_columns("pairwise_judgements")}:
        conn.execute(
            text("ALTER TABLE pairwise_judgements ADD COLUMN run_b VARCHAR REFERENCES runs (id)")
        )
        conn.execute(
            text("CREATE INDEX ix_pairwise_judgements_run_b ON pairwise_judgements (run_b)")
        )


MIGRATIONS: list[tuple[int, Callable[[Connection], None]]] = [
    (1, _v1),
    (2, _v2),
    (3, _v3),
    (4, _v4),
    (5, _v5),
    (6, _v6),
    (7, _v7),
    (8, _v8),
    (9, _v9),
    (10, _v10),
    (11, _v11),
    (12, _v12),
    (13, _v13),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
