"""Tables readable at 80 columns and when piped: fold long words, drop columns by priority.

rich's default for a cell that does not fit is to cut it ("finis…"); at 80 columns a wide
table then shows nothing whole. ``fit`` makes every column fold instead, and removes the
least important columns (named in ``drop_order``) while the narrowest rendering would not
fit, so what remains is whole. ``--json`` always has every column.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        return cell.plain
    return Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)


def fit(table: Table, width: int, drop_order: Sequence[str] = ()) -> list[str]:
    """Fold every column (keeping words whole up to MAX_WORD); drop columns named in
    ``drop_order`` (first = least important) while the table's narrowest rendering, plus a
    margin (rich spreads spare room unevenly), is wider than ``width``. Returns the headers
    dropped, for a note."""
    dropped: list[str] = []
    for header in drop_order:
        if _narrowest(table) + MARGIN <= width:
            break
        for col in table.columns:
            if _plain(col.header) == header:
                table.columns.remove(col)
                dropped.append(header)
                break
    for col in table.columns:
        if not col.no_wrap:
            col.overflow = "fold"
            col.min_width = min(MAX_WORD, _longest_word(col))
    return dropped


MARGIN = 14


def keep_words_whole(table: Table, console: Console) -> bool:
    """Make every column at least as wide as its longest word, so rich wraps between words
    only; False (the table unchanged) when that cannot fit the console's width: callers
    print their rows as lines instead."""
    widths = [(col.overflow, col.min_width) for col in table.columns]
    for col in table.columns:
        col.overflow = "fold"
        col.min_width = _longest_word(col)
    buf = io.StringIO()
    Console(file=buf, width=console.width, color_system=None).print(table)
    shown = set(buf.getvalue().split())
    words = {
        w for col in table.columns for c in (col.header, *col._cells) for w in _plain(c).split()
    }
    if words <= shown:  # every word of every cell printed whole
        return True
    for col, (overflow, min_width) in zip(table.columns, widths, strict=True):
        col.overflow, col.min_width = overflow, min_width
    return False


def _narrowest(table: Table) -> int:
    """Per column its longest word (at most MAX_WORD) plus padding and a border."""
    return 1 + sum(max(3, min(MAX_WORD, _longest_word(col))) + 3 for col in table.columns)


MAX_WORD = 16
"""Columns keep their longest word whole up to this length (longer words fold)."""


def _longest_word(col) -> int:
    words = [w for cell in (col.header, *col._cells) for w in _plain(cell).split()]
    return max((len(w) for w in words), default=1)


def dropped_note(dropped: list[str], console: Console) -> str | None:
    """Which columns were left out, said as it is: a narrow terminal on a terminal; on a pipe
    or a file (a log, a CI job) the width is not the reader's terminal, so it says the width."""
    if not dropped:
        return None
    cols = ", ".join(dropped)
    if console.is_terminal:
        return f"(narrow terminal: {cols} not shown; widen it or use --json)"
    return f"({cols} not shown at {console.width} columns; --json has every column)"
