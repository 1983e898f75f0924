"""Running one host process to completion for the process-based sandboxes (bwrap, unsafe-local).

Both backends start a command in its own process group, feed it stdin, drain both output
streams (keeping at most a cap of each, ``output.Capture``), and on timeout or cancellation
kill the whole group: that part is written once here.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, Process

from harness.sandbox.output import OUTPUT_LIMIT, Capture


@dataclass
class Finished:
    """What a process left behind: its exit code (124 on timeout), output (each stream cut
    to its cap), the bytes cut away, and whether it ran out of time."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    dropped: int = 0


def kill_group(pgid: int) -> None:
    """SIGKILL a process group (the command and everything it started); gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def collect(
    proc: Process,
    *,
    stdin: bytes | None,
    timeout: float | None,
    output_limit: int = OUTPUT_LIMIT,
) -> Finished:
    """Feed ``stdin``, drain stdout and stderr (``output_limit`` bytes kept of each), wait;
    kill the process group on timeout or cancellation. ``proc`` must have been started
    with ``start_new_session=True``."""
    out, err = Capture(output_limit), Capture(output_limit)
    timed_out = False
    code: int | None = None

    async def drain(stream: ByteReceiveStream | None, sink: Capture) -> None:
        if stream is not None:
            async for chunk in stream:
                sink.add(chunk)

    try:
        with anyio.fail_after(timeout) if timeout else contextlib.nullcontext():
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, proc.stdout, out)
                tg.start_soon(drain, proc.stderr, err)
                if stdin is not None:
                    assert proc.stdin is not None  # opened with a pipe when there is input
                    # A command that never reads its input closes the pipe early: fine.
                    with contextlib.suppress(
                        anyio.BrokenResourceError, anyio.ClosedResourceError, OSError
                    ):
                        await proc.stdin.send(stdin)
                    await proc.stdin.aclose()
                await proc.wait()
        code = proc.returncode
    except TimeoutError:
        timed_out, code = True, 124
        err.add(f"\ntimed out after {timeout}s".encode())
    finally:
        if timed_out or proc.returncode is None:
            kill_group(proc.pid)
            with anyio.CancelScope(shield=True):
                await proc.wait()
                await proc.aclose()
    return Finished(
        code if code is not None else -1,
        out.value(),
        err.value(),
        timed_out,
        out.dropped + err.dropped,
    )
