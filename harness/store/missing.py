"""A store that does not exist, for commands that only read: refused, never created.

``Store(url, create=False)`` asks here before its engine could create a SQLite file (and
its directories), and again once connected, so a server database without the harness's
tables is refused instead of migrated.
"""

from __future__ import annotations

import os

from sqlalchemy import inspect
from sqlalchemy.engine import Engine

from harness.errors import ConfigError


class StoreMissing(ConfigError):
    """A command that only reads was pointed at a store that does not exist (exit 2)."""

    def __init__(self, shown_url: str, env_var: str, what: str):
        super().__init__(
            shown_url,
            "",
            f"no harness store here ({what}; nothing was created): check --store or ${env_var}",
        )


def refuse_missing(
    shown_url: str, env_var: str, sqlite_path: str | None, engine: Engine | None = None
) -> None:
    """``StoreMissing`` unless the store exists: the SQLite file (checked before an engine
    could create it), or the schema table in an opened database."""
    if sqlite_path is not None and not os.path.isfile(sqlite_path):
        raise StoreMissing(shown_url, env_var, f"{sqlite_path} does not exist")
    if engine is not None and not inspect(engine).has_table("schema_version"):
        engine.dispose()
        raise StoreMissing(shown_url, env_var, "the database holds no harness tables")
