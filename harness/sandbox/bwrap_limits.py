"""Resource limits of a ``bwrap`` sandbox: one cgroup per trial when the host lets us make one.

Which mechanism applies is decided once per process and printed by the provider:

* **cgroup v2** (a writable ``/sys/fs/cgroup`` with the ``pids`` and ``memory`` controllers)
  or **cgroup v1** (writable ``/sys/fs/cgroup/pids`` and ``/sys/fs/cgroup/memory``): the trial
  gets a cgroup with ``pids.max`` and a memory limit (swap included), and a CPU quota of
  ``limits.cpus`` where the host has the ``cpu`` controller (``cpu.max``, or v1's CFS quota);
  every command of the trial joins it before ``bwrap`` starts, so the limits hold for the
  whole trial, and ``kill_all`` ends every process in it.
* **none** (an unprivileged user on a host without delegated cgroups): memory is capped per
  process with ``ulimit -v`` inside the sandbox; the pid limit cannot be enforced (the
  provider says so once).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from harness.config.base import parse_bytes

ROOT = Path("/sys/fs/cgroup")
_GROUP = "harness"
CPU_PERIOD_US = 100_000
"""The CFS period the CPU quota is given in: ``cpus`` of 0.5 is 50 ms of CPU every 100 ms."""


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def mechanism() -> str:
    """``v2``, ``v1`` or ``none``: how trial limits are enforced on this host."""
    controllers = ROOT / "cgroup.controllers"
    if controllers.is_file():
        have = set(controllers.read_text().split())
        if {"pids", "memory"} <= have and _writable(ROOT):
            return "v2"
        return "none"
    if _writable(ROOT / "pids") and _writable(ROOT / "memory"):
        return "v1"
    return "none"


@dataclass
class TrialCgroup:
    """The cgroup(s) of one trial: their ``cgroup.procs`` files are what a command joins."""

    name: str
    dirs: list[Path]

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError):
                found.update(int(x) for x in (d / "cgroup.procs").read_text().split())
        return found

    def oom_killed(self) -> bool:
        """Did the kernel kill a process of this trial for memory?"""
        for d in self.dirs:
            for name, key in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
                with contextlib.suppress(OSError):
                    for line in (d / name).read_text().splitlines():
                        k, _, v = line.partition(" ")
                        if k == key and int(v or 0) > 0:
                            return True
            with contextlib.suppress(OSError, ValueError):
                if int((d / "memory.failcnt").read_text()) > 0:
                    return True
        return False

    def limit_events(self) -> int:
        """How often the trial has run into its own pid or memory limit so far (the kernel's
        counters). A launch that fails while this grows failed on the trial's own doing."""
        total = 0
        for d in self.dirs:
            for name, keys in (("pids.events", ("max",)), ("memory.events", ("max", "oom"))):
                with contextlib.suppress(OSError, ValueError):
                    for line in (d / name).read_text().splitlines():
                        k, _, v = line.partition(" ")
                        total += int(v or 0) if k in keys else 0
            with contextlib.suppress(OSError, ValueError):
                total += int((d / "memory.failcnt").read_text())
        return total

    def kill_all(self) -> None:
        """SIGKILL every process of the trial, until none is left (bounded)."""
        for d in self.dirs:
            with contextlib.suppress(OSError):
                (d / "cgroup.kill").write_text("1")
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(20):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def create(
    name: str, kind: str, memory: str, pids: int, cpus: float | None = None
) -> TrialCgroup | None:
    """A new cgroup named ``name`` with the trial's limits, or None when ``kind`` is none.

    ``cpus`` becomes a CFS quota when the host has the ``cpu`` controller; without it the
    share is left to the scheduler (``cpu_quota_applies`` says which).
    """
    mem = str(parse_bytes(memory))
    quota = None if cpus is None else max(1_000, int(cpus * CPU_PERIOD_US))
    if kind == "v2":
        parent = ROOT / _GROUP
        parent.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            (parent / "cgroup.subtree_control").write_text("+pids +memory")
        if quota is not None:
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text("+cpu")
        d = parent / name
        d.mkdir()
        (d / "pids.max").write_text(str(pids))
        (d / "memory.max").write_text(mem)
        with contextlib.suppress(OSError):
            (d / "memory.swap.max").write_text("0")
        if quota is not None and (d / "cpu.max").is_file():
            (d / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
        return TrialCgroup(name, [d])
    if kind == "v1":
        pd = ROOT / "pids" / _GROUP / name
        md = ROOT / "memory" / _GROUP / name
        pd.mkdir(parents=True)
        md.mkdir(parents=True)
        (pd / "pids.max").write_text(str(pids))
        (md / "memory.limit_in_bytes").write_text(mem)
        with contextlib.suppress(OSError):
            (md / "memory.memsw.limit_in_bytes").write_text(mem)
        dirs = [pd, md]
        if quota is not None and _writable(ROOT / "cpu"):
            cd = ROOT / "cpu" / _GROUP / name
            cd.mkdir(parents=True)
            dirs.append(cd)
            (cd / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cd / "cpu.cfs_quota_us").write_text(str(quota))
        return TrialCgroup(name, dirs)
    return None


def host_warning(kind: str) -> str | None:
    """What of the suite's ``limits`` this host cannot enforce, said once per run."""
    if kind == "none":
        return (
            "no writable cgroup on this host: memory is capped per process (ulimit -v), "
            "the pid limit is NOT enforced"
        )
    if not cpu_quota_applies(kind):
        return "this host's cgroups have no cpu controller: limits.cpus is NOT enforced"
    return None


def cpu_quota_applies(kind: str) -> bool:
    """Whether ``create`` can give a trial a CPU quota on this host."""
    if kind == "v2":
        return "cpu" in (ROOT / "cgroup.controllers").read_text().split()
    return kind == "v1" and _writable(ROOT / "cpu")


def remove_cgroups_named(name: str) -> None:
    """Remove a trial's cgroups by name, wherever they are (gc after a killed run)."""
    dirs = [ROOT / _GROUP / name] + [ROOT / c / _GROUP / name for c in ("pids", "memory", "cpu")]
    TrialCgroup(name, [d for d in dirs if d.is_dir()]).remove()
