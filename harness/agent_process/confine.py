"""The suite's ``limits`` for a ``module:Class`` agent's own process.

The agent's process runs on the host (in the jail), not in the trial's sandbox, so the
sandbox's limits do not reach it: without these, an agent that allocates 20 GiB or forks
without end takes the host and every other trial with it. Each attempt's process joins a
cgroup of its own (``harness.sandbox.bwrap_limits``: the same mechanism and the same
``memory``, ``pids`` and ``cpus`` values as a bwrap sandbox) the moment it says hello, before it has
run any of the agent's code; ending the attempt removes the cgroup with every process in
it. Where the host gives no writable cgroups (an unprivileged user) the process runs
unconfined, as a bwrap sandbox's pid limit does there.
"""

from __future__ import annotations

import os
import uuid
from contextlib import suppress
from functools import cache

from harness.config.models import Limits
from harness.sandbox import bwrap_limits


class Confinement:
    """One attempt's cgroup: ``join`` the agent's process into it, ``close`` to end it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        kind = bwrap_limits.mechanism()
        _sweep_once(kind)
        name = f"agent-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.cgroup = bwrap_limits.create(name, kind, limits.memory, limits.pids, limits.cpus)

    def join(self, pid: int) -> None:
        """Move ``pid`` (the agent's process, before it runs agent code) into the cgroup."""
        if self.cgroup is None:
            return
        for procs in self.cgroup.procs_files:
            with open(procs, "w") as fh:
                fh.write(str(pid))

    def memory_note(self) -> str | None:
        """Why the kernel ended the process, when it was the memory limit."""
        if self.cgroup is not None and self.cgroup.oom_killed():
            return (
                f"the agent's process went over limits.memory ({self.limits.memory}) and was killed"
            )
        return None

    def close(self) -> None:
        if self.cgroup is not None:
            with suppress(OSError):
                self.cgroup.remove()
            self.cgroup = None


@cache
def _sweep_once(kind: str) -> None:
    """Remove the empty cgroups of harness processes that died without closing theirs (a
    SIGKILL: their agents died with them, ``--die-with-parent``). Only empty ones go: a
    cgroup with a process in it cannot be removed."""
    if kind == "none":
        return
    parents = [bwrap_limits.ROOT / "harness"]
    parents += [bwrap_limits.ROOT / c / "harness" for c in ("pids", "memory", "cpu")]
    for parent in parents:
        with suppress(OSError):
            for d in parent.glob("agent-*-*"):
                pid = d.name.split("-")[1]
                if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                    with suppress(OSError):
                        d.rmdir()
