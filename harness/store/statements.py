"""Statements shared by the store's writers, written once for every dialect."""

from __future__ import annotations

from sqlalchemy import Table, insert
from sqlalchemy.sql import Executable


def insert_ignoring(dialect: str, table: Table, unique: list[str]) -> Executable:
    """INSERT into ``table`` that skips rows whose ``unique`` columns are already stored
    (ON CONFLICT DO NOTHING; INSERT IGNORE on MySQL)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing(index_elements=unique)
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table).on_conflict_do_nothing(index_elements=unique)
    return insert(table).prefix_with("IGNORE", dialect="mysql")
