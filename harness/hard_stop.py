"""The last word of a second Ctrl-C/SIGTERM: the process ends within seconds, whatever hangs.

The second signal cancels the trials in flight and their cleanup runs (sandboxes destroyed,
interrupted attempts recorded). Should that cleanup wait on something that does not answer
(a store that is away, a daemon that went silent), ``arm`` ends the process anyway after
``ABORT_LIMIT_S``: one line, exit 4. What is committed stays committed; the trials cut
have no final row and re-run on resume; sandboxes left behind are removed by ``harness gc``
(and by the next run's start).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import suppress
from typing import NoReturn

from harness import exitcodes

ABORT_LIMIT_S = 10.0
"""Seconds the cleanup after a second signal may take before the process ends regardless."""


def arm(message: str, limit_s: float = ABORT_LIMIT_S) -> None:
    """End the process with ``message`` and exit 4 in ``limit_s`` unless it has ended."""

    def fire() -> None:
        time.sleep(limit_s)
        with suppress(Exception):
            sys.stderr.write(message + "\n")
        exit_now(exitcodes.INTERRUPTED)

    threading.Thread(target=fire, name="hard-stop", daemon=True).start()


def exit_now(code: int) -> NoReturn:
    """Exit at once, without the interpreter's teardown, once cleanup has run: on a loaded
    machine the final garbage collection of a run's heap took 16 s after the last line."""
    with suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
