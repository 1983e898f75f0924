"""Terminal progress: a bar with ETA and live passed / failed / errored counts.

On a terminal it is a live rich bar; otherwise (a nightly job's log) it prints a line
every 10% so logs stay readable.
"""

from __future__ import annotations

import sys
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column

from harness import errors


def progress_columns() -> list[ProgressColumn]:
    """The bar's columns. On a narrow terminal the title and the bar share what is left
    (the title is cut, then the bar shrinks); done/total, the counts, the elapsed time and
    the ETA are never cut: rich's defaults cut those first ('8…', 'ETA 0:0…') at 80 columns."""

    def whole() -> Column:
        return Column(no_wrap=True)

    return [
        TextColumn(
            "[bold]{task.description}",
            table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis", min_width=4),
        ),
        BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=3)),
        MofNCompleteColumn(table_column=whole()),
        TextColumn("{task.fields[counts]}", table_column=whole()),
        TimeElapsedColumn(table_column=whole()),
        TextColumn("ETA", table_column=whole()),
        TimeRemainingColumn(table_column=whole()),
    ]


class TrialProgress:
    def __init__(self, total: int, title: str, enabled: bool = True):
        self.console = Console(stderr=True)
        self.total = total
        self.counts: Counter = Counter()
        self.live = enabled and self.console.is_terminal
        self.enabled = enabled
        self._next_line = 0.1
        self._progress = Progress(
            *progress_columns(), console=self.console, expand=True, disable=not self.live
        )
        self._task = self._progress.add_task(title, total=total, counts=self._counts_text())

    def _counts_text(self) -> str:
        c = self.counts
        errored = sum(c[s] for s in errors.STATUSES if s not in errors.RESOLVED)
        return (
            f"[green]{c[errors.PASSED]} passed[/] [red]{c[errors.FAILED]} failed[/] "
            f"[yellow]{errored} errored[/]"
        )

    def __enter__(self) -> TrialProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def trial_done(self, status: str) -> None:
        self.counts[status] += 1
        done = sum(self.counts.values())
        self._progress.update(self._task, completed=done, counts=self._counts_text())
        if self.enabled and not self.live and self.total and done / self.total >= self._next_line:
            self._next_line += 0.1
            plain = self._counts_text()
            for tag in ("[green]", "[red]", "[yellow]", "[/]"):
                plain = plain.replace(tag, "")
            print(f"[{done}/{self.total}] {plain}", file=sys.stderr, flush=True)

    def note(self, text: str) -> None:
        if self.enabled:
            # one line, never wrapped; brackets in a message are its text, not markup
            self.console.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)
