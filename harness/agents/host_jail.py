"""Where a ``where: host`` program runs: on this machine, but never beside the harness.

A host program is the agent under test with a shell on the harness's machine. Run as the
harness's user, it could read the harness's ``/proc/<pid>/environ`` (the real API keys),
trace it, signal it, or rewrite its code. So it runs in a bubblewrap jail of its own:

- its own PID namespace with a fresh ``/proc``: the harness and every other process of the
  machine are invisible to it (no environ, no memory, no signals);
- its own user namespace with no capabilities, its own IPC and hostname;
- the host's file system read-only, with only its working directory, the harness's exchange
  files and a private ``/tmp`` writable; ``/run`` (sockets such as Docker's) replaced by an
  empty one;
- the host's network (it reaches the metering proxy on 127.0.0.1 with its per-trial token);
- exactly the environment the command agent gives it (bwrap itself starts with that, so even
  the jail's PID 1 holds nothing else); killed with the harness (``--die-with-parent``).

Without a working ``bwrap`` (not installed, or user namespaces disabled) host programs are
refused: ``where: sandbox`` or installing bubblewrap are the ways on.
"""

from __future__ import annotations

import functools
import os
import shutil

from harness.errors import ConfigError


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


def jailed(argv: list[str], *, cwd: str, writable: list[str]) -> list[str]:
    """``argv`` wrapped in the jail, working in ``cwd``; ``cwd`` and ``writable`` are the
    only host paths it may write (bound at the same paths)."""
    exe = shutil.which("bwrap") or "bwrap"
    args = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--tmpfs", "/tmp", "--tmpfs", "/run"]
    for path in dict.fromkeys([cwd, *writable]):  # after the tmpfs: they may live in /tmp
        real = os.path.realpath(path)
        args += ["--bind", real, real]
    args += [
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


__all__ = ["available", "jailed", "require"]
