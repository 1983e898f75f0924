"""The store's column types for agent text: ``harness.text``'s storing rule, applied by the
database layer to every value written and read, so no writer can forget it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text
from sqlalchemy.types import TypeDecorator
from sqlmodel.sql.sqltypes import AutoString

from harness.text import from_store, to_store


class _Stored(TypeDecorator[str]):
    """A column that stores any Python string losslessly (see the module docstring)."""

    impl: Any = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return to_store(value) if isinstance(value, str) else value

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        return from_store(value) if isinstance(value, str) else value


class StoredText(_Stored):
    """A text column (``TEXT``) of agent-controlled text."""

    impl = Text
    cache_ok = True


class StoredString(_Stored):
    """A string column (``VARCHAR``, the DDL of a plain ``str`` field) of agent text."""

    impl = AutoString
    cache_ok = True


__all__ = ["StoredString", "StoredText"]
