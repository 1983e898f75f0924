"""How the store connects: SQLite's pragmas and read-only opens, PostgreSQL's pool.

Kept apart from ``harness.store.db`` (what is written and read) because these are the
settings a store's integrity under concurrent processes rests on (README, "Where results
are stored"; ``tests/faults/test_store_concurrency.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

POOL_PARAMS = ("pool_size", "max_overflow", "pool_timeout", "pool_recycle")
"""Pool settings read from a URL's query string (``?pool_size=2``), never passed to the driver."""


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL (None: not SQLite, in memory, or a file: URI)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("///", 1)[-1].split("?", 1)[0]
    return None if not path or path == ":memory:" or path.startswith("file:") else path


def read_only_sqlite(url: str) -> bool:
    """An existing SQLite file this process cannot write (read-only mount, permissions, an
    immutable file), or one in a directory it cannot write (no journal can be made there).

    Asked with ``access(2)``, never by opening the file: closing any descriptor of the
    database drops every POSIX lock this process's SQLite connections hold on it, after which
    another process's connection believes it is the last one, checkpoints and deletes the WAL
    under the running writer, and the writer's later commits go to a deleted file. Nothing
    but the SQLite driver may open the database or its ``-wal``/``-shm`` files.
    """
    path = sqlite_path(url)
    if path is None or not os.path.isfile(path):
        return False
    if not os.access(path, os.W_OK):
        return True
    return not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


PG_CONNECT_TIMEOUT_S = 10
"""Seconds a PostgreSQL connection attempt may take (libpq ``connect_timeout``)."""
SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long one SQLite statement waits for another process's lock before it fails."""
SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",  # readers never block the writer, nor the writer them
    "PRAGMA synchronous=NORMAL",  # a commit survives a killed process (not a power cut)
    "PRAGMA wal_autocheckpoint=1000",  # SQLite's default, stated: pages back every ~4 MB
    "PRAGMA journal_size_limit=67108864",  # a WAL left over 64 MiB is cut back after that
    "PRAGMA foreign_keys=ON",
)
"""Set on every connection of a writable SQLite store (README, "Where results are stored")."""


def make_engine(url: str, pool_size: int, max_overflow: int, read_only: bool = False) -> Engine:
    sqlite_args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S}
    if url.startswith("sqlite") and read_only:
        # immutable: no -wal/-shm files are created or read, so a store on a read-only
        # mount (or a copy someone handed over) can still be reported.
        path = os.path.abspath(sqlite_path(url) or "")
        # mode=ro still reads the WAL (recent writes) where its -shm file can be used; a
        # read-only directory needs immutable (no -wal/-shm at all: a cleanly closed store).
        mode = "ro" if os.access(os.path.dirname(path), os.W_OK) else "ro&immutable=1"
        target = f"sqlite:///file:{path}?mode={mode}&uri=true"
        return create_engine(target, connect_args=sqlite_args)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args=sqlite_args)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            for pragma in SQLITE_PRAGMAS:
                cur.execute(pragma)
            cur.close()

        return engine
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            url = "postgresql+psycopg://" + url[len(plain) :]
    parsed = make_url(url)
    pool: dict[str, int] = {"pool_size": pool_size, "max_overflow": max_overflow}
    for key in POOL_PARAMS:
        if key in parsed.query:
            value = parsed.query[key]
            pool[key] = int(value if isinstance(value, str) else value[-1])
    parsed = parsed.difference_update_query(POOL_PARAMS)
    # A server that does not answer (a network cut) fails a connection attempt in 10 s
    # instead of the system's TCP timeout, so the writer's outage window is what waits.
    connect: dict[str, Any] = {}
    if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
        connect["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    return create_engine(parsed, pool_pre_ping=True, connect_args=connect, **pool)
