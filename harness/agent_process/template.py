"""The agent jail's template: a Python process INSIDE the jail (started by ``jail``) with the
child's imports already done, that forks one fresh process per trial attempt.

It holds no secret and runs no agent code. Each request on its control socket (a JSON
object with the trial's socket directory, and the trial's channel and stderr as passed
descriptors) forks a child that puts itself in namespaces of its own (``namespaces``)
and forks again: that grandchild is PID 1 of a new PID namespace, keeps only its two
descriptors, drops every capability, and only then reads the harness's first message and
imports the agent's module (``child.serve``). Trials share nothing but the template's
imports (copied at fork). When the harness's end of the control socket closes (the harness
ended, or was killed), the template kills every process in the jail and exits; the jail's
PID namespace ends with it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from contextlib import suppress

CHANNEL_FD = 3
"""The descriptor a trial's process talks to the harness on."""
MAX_FDS = 2


def _preload() -> None:
    """Everything a child imports before its agent, the model client agents use, and what
    the load-time check of an agent needs."""
    import anyio._backends._asyncio  # noqa: F401  # anyio.run imports it on first use

    import harness.agent_process.child  # noqa: F401
    import harness.agent_process.namespaces  # noqa: F401
    import harness.config.loader  # noqa: F401
    import harness.models  # noqa: F401


def main() -> None:
    control_fd, spool, keep = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    control = socket.socket(fileno=control_fd)
    _preload()
    control.sendall(b'{"op": "ready"}')
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(control, 65536, MAX_FDS)
        except InterruptedError:
            continue
        if not data:  # the harness closed the jail, or ended: so do all its processes
            with suppress(OSError):
                os.kill(-1, signal.SIGKILL)
            os._exit(0)
        try:
            request = json.loads(data)
            if len(fds) == MAX_FDS:
                _spawn(request, fds, spool, keep)
        except Exception:  # a request the template cannot serve: its trial sees no hello
            pass
        finally:
            for fd in fds:
                os.close(fd)
        _reap()


def _reap() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _spawn(request: dict[str, object], fds: list[int], spool: str, keep: list[str]) -> None:
    """Fork the trial's process; the intermediate child exits once its grandchild (PID 1 of
    the new namespace) runs, and the jail's init reaps that one."""
    channel, stderr = fds
    pid = os.fork()
    if pid != 0:
        os.waitpid(pid, 0)
        return
    try:
        os.dup2(stderr, 2)
        socket_dir = request.get("socket_dir")
        home = "/tmp"
        from harness.agent_process import namespaces

        namespaces.isolate(
            None if socket_dir is None else os.path.join(spool, str(socket_dir)),
            spool,
            keep,
            str(request.get("home_size") or "256m"),
        )
        if os.fork() == 0:
            _grandchild(channel, stderr, home)
    except BaseException as exc:
        os.write(2, f"the agent jail could not start the agent's process: {exc}\n".encode())
        os._exit(1)
    os._exit(0)


def _grandchild(channel: int, stderr: int, home: str) -> None:
    try:
        from harness.agent_process import namespaces

        namespaces.enter()
        os.dup2(stderr, 2)
        os.dup2(stderr, 1)
        os.dup2(channel, CHANNEL_FD)  # over the control socket, if it was there
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.closerange(CHANNEL_FD + 1, os.sysconf("SC_OPEN_MAX"))  # the control socket too
        os.setsid()
        os.chdir(home)
    except BaseException as exc:
        os.write(2, f"the agent jail could not isolate the agent's process: {exc}\n".encode())
        os._exit(1)
    from harness.agent_process.child import serve

    serve(CHANNEL_FD)


if __name__ == "__main__":
    main()
