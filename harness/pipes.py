"""Standard output whose reader may leave early: `harness gate RUN | head` keeps exit 11.

When the reader of a pipe exits (``head``, ``grep -q``), the next write raises
``BrokenPipeError``; click turns that into exit 1, and a CI step running with ``pipefail``
would read a gate's "inconclusive" (11) as a crash. ``guard_stdout`` wraps ``sys.stdout`` so
that, from the first broken write on, the rest of the output goes to /dev/null and the
command ends with its own exit code, as ``yes | head`` programs do.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


class _ReaderGone:
    """A text stream that forwards to ``inner`` until a write finds the reader gone."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._inner.write(text)
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._inner.flush()
            except BrokenPipeError:
                self._reader_left()

    def _reader_left(self) -> None:
        """Point the descriptor at /dev/null, so no later flush (at exit, too) can raise."""
        self._gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._inner.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # no descriptor (a test's captured stream)
            pass

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer ...
        return getattr(self._inner, name)


def guard_stdout() -> None:
    """Install the guard on ``sys.stdout`` (once)."""
    if not isinstance(sys.stdout, _ReaderGone) and sys.stdout is not None:
        sys.stdout = _ReaderGone(sys.stdout)
