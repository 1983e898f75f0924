"""Where a ``where: host`` program runs: on this machine, but never beside the harness.

A host program is the agent under test with a shell on the harness's machine. Run as the
harness's user, it could read the harness's ``/proc/<pid>/environ`` (the real API keys),
trace it, signal it, or rewrite its code. So it runs in a bubblewrap jail of its own:

- its own PID namespace with a fresh ``/proc``: the harness and every other process of the
  machine are invisible to it (no environ, no memory, no signals);
- its own user namespace with no capabilities, its own IPC and hostname;
- the host's file system read-only, with only its working directory, the harness's exchange
  files and a private ``/tmp`` writable; ``/run`` (sockets such as Docker's) replaced by an
  empty one; container runtimes' data roots (other trials' file systems) left out;
- the host's network (it reaches the metering proxy on 127.0.0.1 with its per-trial token);
- exactly the environment the command agent gives it (bwrap itself starts with that, so even
  the jail's PID 1 holds nothing else); killed with the harness (``--die-with-parent``).

``run`` starts the jailed program in a session of its own and kills the whole session when
it ends, so no background process of the program outlives its trial.

Without a working ``bwrap`` (not installed, or user namespaces disabled) host programs are
refused: ``where: sandbox`` or installing bubblewrap are the ways on.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
from contextlib import suppress
from typing import Any, TypedDict

import anyio
from anyio.abc import ByteReceiveStream

from harness import text
from harness.errors import ConfigError, SandboxError
from harness.sandbox.launch_marker import LAUNCHES, RELAUNCH_DELAY_S, StartMarker
from harness.sandbox.output import Capture


@functools.cache
def available() -> bool:
    """True when bwrap can build the jail here (checked once per process)."""
    from harness.sandbox.bwrap import bwrap_available

    return bwrap_available()


def require(field: str) -> None:
    """Raise the ``ConfigError`` (naming ``field``) for a host program on a machine where
    the jail cannot be built."""
    if not available():
        raise ConfigError(
            "suite",
            field,
            "a where: host program runs in a bubblewrap jail that keeps the harness's keys "
            "and processes out of its reach, and bwrap does not work here (install "
            "bubblewrap, enable user namespaces) — or run the program with where: sandbox",
        )


LEFT_OUT = {"/proc", "/dev", "/tmp", "/run", "/var/lib/docker", "/var/lib/containerd"}
"""Host paths the jail does not show: its own ``/proc``, ``/dev``, ``/tmp`` and ``/run`` replace
the first four, and container runtimes' data roots hold other trials' file systems, with
overlay mounts that come and go as containers start and stop (a recursive bind of the host
that meets one mid-change fails: ``Can't bind mount /oldroot/ ... Invalid argument``)."""


def host_binds(top: str = "/") -> list[str]:
    """The host's file system below ``top``, read-only, as bwrap arguments: each entry bound
    on its own, links as links, descending only where a left-out path lies below."""
    args: list[str] = []
    try:
        names = sorted(os.listdir(top))
    except OSError:
        return args
    for name in names:
        path = os.path.join(top, name)
        if path in LEFT_OUT:
            continue
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif any(out.startswith(path + "/") for out in LEFT_OUT):
            args += ["--dir", path, *host_binds(path)]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def jailed(
    argv: list[str], *, cwd: str, writable: list[str], marker: StartMarker | None = None
) -> list[str]:
    """``argv`` wrapped in the jail, working in ``cwd``; ``cwd`` and ``writable`` are the
    only host paths it may write (bound at the same paths). With ``marker``, the jail marks
    the moment ``argv`` starts (``harness.sandbox.launch_marker``)."""
    if marker is not None:
        argv = ["bash", "-c", f'{marker.script()}exec "$@"', "bash", *argv]
    exe = shutil.which("bwrap") or "bwrap"
    args = [exe, *host_binds(), "--dev", "/dev", "--proc", "/proc"]
    args += ["--tmpfs", "/tmp", "--tmpfs", "/run"]
    for path in dict.fromkeys([cwd, *writable]):  # after the tmpfs: they may live in /tmp
        real = os.path.realpath(path)
        args += ["--bind", real, real]
    args += [
        "--remount-ro",
        "/",
        "--chdir",
        os.path.realpath(cwd),
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "agent-host",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--",
        *argv,
    ]
    return args


class ProgramRun(TypedDict, total=False):
    """How the agent program's process ended."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    dropped: int
    """Bytes of its output over the cap, not kept (``harness.sandbox.output``)."""
    error: Exception
    """What running it raised (re-raised once the task group is left)."""


async def run_jailed(
    argv: list[str], *, stdin: str | None, cwd: str, writable: list[str], env: dict[str, str]
) -> ProgramRun:
    """Run ``argv`` in its host jail (``jailed``, ``run``). When bwrap fails before the
    program starts (the host's recursive bind meeting a mount that changes under it: a Docker
    container removed beside the run), nothing of the program has run: it is launched again,
    and a jail that never starts is a ``SandboxError`` (infrastructure, retried), never the
    program's failure."""
    for launch in range(LAUNCHES):
        marker = StartMarker()
        try:
            wrapped = jailed(argv, cwd=cwd, writable=writable, marker=marker)
            done = await run(wrapped, stdin=stdin, cwd=cwd, env=env, marker=marker)
            if done.get("exit_code") == 0 or marker.started():
                return done
        finally:
            marker.close()
        if launch < LAUNCHES - 1:
            await anyio.sleep(RELAUNCH_DELAY_S * (launch + 1))
    why = (done.get("stderr") or "").strip()[:300]
    raise SandboxError(f"the host program's jail did not start ({LAUNCHES} launches): {why}")


async def run(
    argv: list[str],
    *,
    stdin: str | None,
    cwd: str | None,
    env: dict[str, str],
    marker: StartMarker | None = None,
) -> ProgramRun:
    """Run ``argv`` (the program in its host jail) in its own session with exactly ``env``;
    kill the whole session when done or cancelled, so no background process of the program
    outlives its trial. ``marker``'s descriptor is passed to it."""
    from subprocess import PIPE

    out, err = Capture(), Capture()

    async def pump(stream: ByteReceiveStream | None, sink: Capture) -> None:
        if stream is None:
            return
        with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in stream:
                sink.add(chunk)

    async def feed(proc: Any) -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            if stdin is not None:
                await proc.stdin.send(stdin.encode())
            await proc.stdin.aclose()

    proc = await anyio.open_process(
        argv,
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
        pass_fds=(marker.fd,) if marker is not None else (),
    )
    if marker is not None:
        marker.spawned()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump, proc.stdout, out)
            tg.start_soon(pump, proc.stderr, err)
            tg.start_soon(feed, proc)
            await proc.wait()
            kill_session(proc.pid)  # stragglers holding the pipes open
    finally:
        if proc.returncode is None:
            kill_session(proc.pid)
        with anyio.CancelScope(shield=True):
            await proc.aclose()
    return {
        "exit_code": proc.returncode,
        "stdout": text.decode(out.value()),
        "stderr": text.decode(err.value()),
        "dropped": out.dropped + err.dropped,
    }


def kill_session(pid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


__all__ = ["ProgramRun", "available", "jailed", "kill_session", "require", "run", "run_jailed"]
