"""Did the command start? Machinery evidence for telling a sandbox's own launch failure from
the command's failure.

A bubblewrap launch can fail before the command runs: a bind mount of the host meeting a Docker
overlay that is being torn down beside it (``Can't bind mount /oldroot/ ... Invalid argument``),
a missing source path, no namespaces left. bwrap then exits 1 with a ``bwrap:`` message, which
is exactly what a command can print itself. Deciding by the text would let an agent turn its own
failures into infrastructure errors and be retried until it passes.

So the harness passes the launcher one end of a pipe; the first thing run inside the sandbox,
before the command, writes one byte to it and closes it. A nonzero exit with that byte on the
pipe is the command's; without it the command never ran, and the failure is the machinery's.
Nothing the command does afterwards can take the byte back.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from contextlib import suppress

import anyio

from harness.errors import SandboxError
from harness.sandbox.output import OUTPUT_LIMIT
from harness.sandbox.process import Finished, collect

LAUNCHES = 3
"""Launches of one command before a launcher that fails before it runs is an error: a host
mount changing under bwrap (a Docker container removed beside it) fails one launch."""
RELAUNCH_DELAY_S = 0.25
"""Seconds before the second launch (twice that before the third): such a change is brief."""


class StartMarker:
    """One pipe per launch: ``fd`` goes to the child (``pass_fds``), ``started`` reads it."""

    def __init__(self) -> None:
        self._read, self.fd = os.pipe()
        self._seen = False
        self._open = {self._read, self.fd}
        """Ends not yet closed: each is closed once (a second close could hit a descriptor
        another thread has opened since under the same number)."""

    def script(self) -> str:
        """Shell text (bash: the descriptor may be above 9) that marks the start and closes
        the descriptor, so the command never holds it."""
        return f"printf . >&{self.fd}; exec {self.fd}>&-; "

    def spawned(self) -> None:
        """Close the harness's copy of the write end (the child holds its own)."""
        self._close(self.fd)

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            with suppress(OSError):
                os.close(fd)

    def started(self) -> bool:
        """True when the byte arrived. Call after the launcher has exited."""
        if not self._seen and self._read in self._open:
            os.set_blocking(self._read, False)
            with suppress(BlockingIOError, OSError):
                self._seen = bool(os.read(self._read, 1))
        return self._seen

    def close(self) -> None:
        """Release both ends."""
        self._close(self.fd)
        self._close(self._read)


async def run_marked(
    argv_for: Callable[[StartMarker], list[str]],
    *,
    stdin: bytes | None,
    timeout: float | None,
    env: dict[str, str],
    groups: set[int],
    output_limit: int = OUTPUT_LIMIT,
    limit_events: Callable[[], int] | None = None,
) -> tuple[Finished, bool]:
    """Launch ``argv_for(marker)`` in a session of its own (its pid in ``groups`` while it
    runs) and collect it. The flag says whether the outcome is the command's: it started,
    exited 0, or its launch failed while the trial ran into its own pid or memory limit
    (``limit_events``, the kernel's counters, grew: say another of its commands forked to the
    limit). False: the launcher failed before the command ran, so nothing of it happened and
    it may be launched again."""
    marker = StartMarker()
    before = limit_events() if limit_events is not None else 0
    try:
        try:
            proc = await anyio.open_process(
                argv_for(marker),
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                start_new_session=True,
                env=env,
                pass_fds=(marker.fd,),
            )
        except OSError as exc:
            raise SandboxError(f"bwrap exec failed: {exc}") from exc
        marker.spawned()
        groups.add(proc.pid)
        try:
            # bwrap and its namespace's init die with the group; the kernel kills the rest.
            done = await collect(proc, stdin=stdin, timeout=timeout, output_limit=output_limit)
        finally:
            groups.discard(proc.pid)
        hit_limits = limit_events is not None and limit_events() > before
        return done, done.exit_code == 0 or marker.started() or hit_limits
    finally:
        marker.close()
