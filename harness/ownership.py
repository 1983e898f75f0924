"""Who owns a run: the process that writes its trials. One owner at a time.

A run row records the host and pid of its owner. A row still marked ``running`` whose owner
process is gone (killed with SIGKILL, machine rebooted) is shown as ``interrupted`` and can be
resumed; one whose owner is alive cannot be resumed by a second process.
"""

from __future__ import annotations

import os
import socket
from typing import Protocol

from harness.errors import RunBusy


class _RunRow(Protocol):
    id: str
    status: str
    host: str
    pid: int


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def owner_gone(run: _RunRow) -> bool:
    """A ``running`` row whose owner process on this host no longer exists."""
    return run.status == "running" and run.host == socket.gethostname() and not pid_alive(run.pid)


def shown_status(run: _RunRow) -> str:
    """The status to show: ``interrupted`` for a running row whose owner is gone."""
    return "interrupted" if owner_gone(run) else run.status


def check_resumable(run: _RunRow) -> None:
    """Refuse to resume a run another live process is running (one line naming it)."""
    if run.status != "running" or owner_gone(run):
        return
    if run.host == socket.gethostname() and run.pid == os.getpid():
        return
    where = "this machine" if run.host == socket.gethostname() else f"host {run.host}"
    raise RunBusy(
        f"run {run.id} is being run by process {run.pid} on {where}; "
        "wait for it or stop it (Ctrl-C) before resuming"
    )
