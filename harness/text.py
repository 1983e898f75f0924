"""Text the agent controls, made safe where it enters and leaves the harness.

An agent decides the bytes its commands print and the names of the files it makes, and a
program or model can send JSON strings with lone surrogates (``"\\ud800"``) or NUL. None of
that is valid text everywhere: SQLite and PostgreSQL refuse lone surrogates, PostgreSQL
refuses NUL in text columns, and writing such a string to a terminal or a UTF-8 file raises.
One rule, declared here, keeps every such value from crashing a run:

* **Output bytes** of a sandbox become text with ``decode``: UTF-8, each byte that is not
  valid UTF-8 shown as ``\\xNN`` (what agents, graders and the trajectory see).
* **Stored text** goes through ``to_store`` and back through ``from_store``
  (``harness.text_columns``: the column type of every text column a trial writes): a string the databases accept is stored as it is; any other is stored as
  ``ESCAPED`` followed by the string with backslashes doubled and each lone surrogate and
  NUL written ``\\uXXXX``, and read back exactly. JSON columns need no help: the JSON
  serializer writes those characters as ``\\uXXXX`` escapes and reads them back exactly.
* **Printed text** (terminal, HTML, Markdown, files) is written with ``backslashreplace``:
  a lone surrogate shows as ``\\udcff``; ``printable`` and ``write_text`` apply it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ESCAPED = "\u241b"
"""First character of a stored string that was escaped (SYMBOL FOR ESCAPE, ``␛``)."""

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPES = re.compile(r"\\(\\|u[0-9a-f]{4})")


def decode(data: bytes) -> str:
    """Bytes a sandbox printed as text: UTF-8, undecodable bytes as ``\\xNN``."""
    return data.decode("utf-8", errors="backslashreplace")


def invalid_at(text: str) -> int | None:
    """Where ``text`` holds its first lone surrogate (not Unicode text), or None."""
    found = _SURROGATE.search(text)
    return found.start() if found else None


def printable(text: str) -> str:
    """``text`` with lone surrogates as ``\\udcff`` escapes: encodable as UTF-8 anywhere."""
    if not _UNSTORABLE.search(text):
        return text
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def utf8(text: str) -> bytes:
    """A page as UTF-8 bytes, agent text that is not valid Unicode escaped."""
    return text.encode("utf-8", errors="backslashreplace")


def write_text(path: Path, text: str) -> None:
    """Write a report or page as UTF-8, agent text that is not valid Unicode escaped."""
    path.write_text(text, encoding="utf-8", errors="backslashreplace")


def to_store(text: str) -> str:
    """The form a database keeps: ``text`` itself when both databases accept it and it does
    not start with ``ESCAPED``, else the escaped form (reversed by ``from_store``)."""
    if not _UNSTORABLE.search(text) and not text.startswith(ESCAPED):
        return text
    body = _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text.replace("\\", "\\\\"))
    return ESCAPED + body


def from_store(stored: str) -> str:
    """The exact string ``to_store`` was given."""
    if not stored.startswith(ESCAPED):
        return stored
    return _ESCAPES.sub(
        lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), stored[1:]
    )


def safe_stdio() -> None:
    """Make the terminal streams print lone surrogates as escapes instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


__all__ = [
    "ESCAPED",
    "decode",
    "from_store",
    "invalid_at",
    "printable",
    "safe_stdio",
    "to_store",
    "utf8",
    "write_text",
]
