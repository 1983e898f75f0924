"""The agent jail, the harness's side: what a ``module:Class`` agent's process may see, and
the template process (``template``) that forks one such process per trial attempt.

The jail is a bubblewrap sandbox made once per agent and run: new user, PID, network,
IPC, UTS and cgroup namespaces, and a filesystem of read-only binds of only

* the host's ``/usr`` (and the ``/bin``, ``/lib`` links) and a few files of ``/etc``, as
  the ``bwrap`` sandbox backend shows its commands;
* the Python installation and its site-packages (``sys.base_prefix``, ``sys.prefix``);
* the ``harness`` package's own directory (not the checkout or project around it);
* the agent's module: its file, or its top-level package's directory; and
* a spool directory holding the trials' metering-proxy sockets;

over an empty read-only root, with a ``/proc`` and ``/dev`` of its own. No task file,
hidden folder, environment, store, other trial's directory, Docker socket or the
harness's ``/proc`` entry is in it, and its network namespace has only a loopback.

Each trial's process then gets namespaces of its own inside (``namespaces``): its own
PID namespace (it is PID 1: when it is killed, every process it started dies with it,
detached or not), its own mount namespace (a fresh tmpfs ``/tmp`` as ``HOME``, its own
proxy socket at ``/run/harness`` and no other trial's), its own loopback (where it
relays model calls to that socket), and no capability. The harness learns its PID through
the kernel (``SCM_CREDENTIALS``), holds a pidfd on it and kills it by that.

When bubblewrap cannot make the jail, ``unavailable`` says why; ``module:Class`` agents
are then refused at load time, except on ``unsafe-local`` (which isolates nothing anyway),
where they run as a plain child process (``launch_plain``).
"""

from __future__ import annotations

import atexit
import functools
import importlib.machinery
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio

STARTUP_S = 120.0
"""Seconds the template may take to start and import what children need."""
HOME_SIZE = "256m"
"""Size of each trial process's tmpfs ``/tmp`` (its ``HOME``)."""
SPOOL = "/spool"
"""Where the jail sees its spool of per-trial socket directories."""
SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")
_SCM_CREDENTIALS = 2
_UCRED = struct.Struct("iII")
TEMPLATE_MAIN = "from harness.agent_process.template import main; main()"
CHILD_MAIN = "from harness.agent_process.child import main; main()"


class JailError(RuntimeError):
    """The jail (or a process in it) could not be started; the message says why."""


# -- what the jail shows ---------------------------------------------------------------------
@dataclass(frozen=True)
class JailView:
    """The host paths a jail binds read-only (at the same place) besides the system's."""

    binds: tuple[str, ...]
    agent_paths: tuple[str, ...] = ()
    """Of ``binds``, the agent's own module (file or package directory)."""

    def exposes(self, paths: list[Path]) -> list[Path]:
        """Those of ``paths`` that are inside (or are) a bound path."""
        roots = [Path(b) for b in self.binds]
        return [p for p in paths if any(p == r or r in p.parents for r in roots)]


def search_path() -> list[str]:
    """The harness's import path, absolute (as the agent's process gets it)."""
    return list(dict.fromkeys(os.path.abspath(p or os.getcwd()) for p in sys.path))


def module_paths(target: str, path: list[str]) -> list[str]:
    """Where ``target``'s top-level module lives on ``path``, found without importing
    anything: the file of a plain module, the directories of a package."""
    top = target.partition(":")[0].split(".")[0]
    spec = importlib.machinery.PathFinder.find_spec(top, path)
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [str(Path(p).resolve()) for p in spec.submodule_search_locations]
    if spec.origin and os.path.isfile(spec.origin):
        return [str(Path(spec.origin).resolve())]
    return []


def view_for(target: str) -> JailView:
    """The jail of the ``module:Class`` agent ``target``."""
    import harness

    base = {
        str(Path(p).resolve())
        for p in (sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix)
    }
    base.add(str(Path(harness.__file__).resolve().parent))
    agent = [p for p in module_paths(target, search_path()) if not _under(p, base)]
    binds = sorted(p for p in base | set(agent) if not p.startswith("/usr/"))
    kept = tuple(p for p in binds if not any(p != q and _under(p, {q}) for q in binds))
    return JailView(kept, tuple(agent))


def jail_python() -> str:
    """This interpreter by a path that exists in the jail: the jail binds the resolved
    prefixes, so a virtualenv reached through a symlink (``.venv -> /opt/venvs/x``) is run
    from where it really is (still as the venv: its ``pyvenv.cfg`` is there)."""
    exe = Path(sys.executable)
    try:
        return str(Path(sys.prefix).resolve() / exe.relative_to(sys.prefix))
    except ValueError:
        return sys.executable


def _under(path: str, roots: set[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@functools.cache
def unavailable() -> str | None:
    """Why the jail cannot be made on this host (None: it can)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    probe = [exe, "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0"]
    from harness.sandbox.bwrap_root import system_binds

    # not the whole host: a recursive bind of / fails while a Docker container's mounts change
    probe += ["--cap-add", "ALL", *system_binds(), "--proc", "/proc", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not run ({exc})"
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return f"bubblewrap cannot create namespaces here ({why[0][:200]})"
    return None


# -- one trial's process, jailed or plain ------------------------------------------------------
@dataclass
class Launched:
    """One agent process: the harness's ends of its channel and stderr, and how to stop it.

    ``pid`` is learnt from the kernel when the process says hello (jailed), or is the plain
    child's; ``kill`` ends it and, jailed, its whole PID namespace."""

    channel: socket.socket
    stderr: socket.socket
    proc: subprocess.Popen[bytes] | None = None
    home: str | None = None
    pid: int | None = None
    pidfd: int | None = None
    on_hello: Callable[[int], None] | None = None
    """Called with the process's pid when it says hello, before it runs agent code."""
    _closed: bool = field(default=False, repr=False)

    @property
    def returncode(self) -> int | None:
        """A plain child's exit status (a jailed one's is not known to the harness)."""
        return None if self.proc is None else self.proc.returncode

    def _hello(self, data: bytes, ancdata: list[tuple[int, int, bytes]]) -> None:
        if not data:
            raise JailError("the agent's process ended before it started")
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == _SCM_CREDENTIALS:
                self.pid = _UCRED.unpack(payload[: _UCRED.size])[0]
        if self.proc is not None:
            self.pid = self.proc.pid
        if self.pid is None or self.pid <= 0:
            raise JailError("the agent's process did not say who it is")
        self.pidfd = os.pidfd_open(self.pid)
        if self.on_hello is not None:
            self.on_hello(self.pid)

    def hello_sync(self, timeout: float) -> None:
        self.channel.settimeout(timeout)
        try:
            data, ancdata, _flags, _addr = self.channel.recvmsg(4096, socket.CMSG_SPACE(12))
        except TimeoutError:
            raise JailError(f"the agent's process did not start within {timeout:g}s") from None
        finally:
            self.channel.settimeout(None)
        self._hello(data, ancdata)

    async def hello(self) -> None:
        self.channel.setblocking(False)
        while True:
            await anyio.wait_readable(self.channel)
            try:
                data, ancdata, _flags, _addr = self.channel.recvmsg(4096, socket.CMSG_SPACE(12))
            except BlockingIOError:
                continue
            break
        self._hello(data, ancdata)

    def stderr_now(self) -> str:
        """What the process wrote to its stderr so far (without waiting)."""
        chunks = []
        self.stderr.setblocking(False)
        with suppress(OSError):
            while chunk := self.stderr.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "replace").strip()

    def kill(self) -> None:
        """Kill the process and everything it started (its PID namespace, or, plain, its
        process session)."""
        if self.proc is not None:
            with suppress(OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
        if self.pidfd is not None:
            with suppress(OSError, subprocess.TimeoutExpired):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    async def wait(self) -> None:
        if self.pidfd is not None:
            await anyio.wait_readable(self.pidfd)
        if self.proc is not None:
            await anyio.to_thread.run_sync(self.proc.wait)

    def wait_sync(self, timeout: float = 30.0) -> None:
        if self.pidfd is not None:
            select.select([self.pidfd], [], [], timeout)
        if self.proc is not None:
            with suppress(OSError, subprocess.TimeoutExpired):
                self.proc.wait(timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sock in (self.channel, self.stderr):
            sock.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)


def _pairs() -> tuple[socket.socket, socket.socket, socket.socket, socket.socket]:
    """(harness channel, child channel, harness stderr, child stderr)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    err_ours, err_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    err_theirs.shutdown(socket.SHUT_RD)
    return ours, theirs, err_ours, err_theirs


_STARTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-jail-starter")
"""The one thread that starts every jail and plain child, alive as long as the harness: bwrap's
``--die-with-parent`` (``PR_SET_PDEATHSIG``) kills the jail when the *thread* that started
it ends, and the worker threads trials run blocking calls in end when idle."""


def launch_plain() -> Launched:
    """A plain child process (no jail; ``unsafe-local`` without bubblewrap): a fresh
    Python in a session of its own, an empty temporary directory as home and working
    directory, an environment made from nothing, killed when the harness ends
    (``setpriv --pdeathsig``); as root, no capability either."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise JailError("running module:Class agents without a jail needs setpriv (util-linux)")
    ours, theirs, err_ours, err_theirs = _pairs()
    home = tempfile.mkdtemp(prefix="harness-agent-")
    command = [setpriv, "--pdeathsig", "KILL"]
    if os.geteuid() == 0:
        command += ["--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]
    command += [sys.executable, "-c", CHILD_MAIN, str(theirs.fileno())]
    env = {k: os.environ[k] for k in SAFE_ENV_KEYS if k in os.environ}
    env.update(HOME=home, TMPDIR=home, PYTHONPATH=os.pathsep.join(search_path()))
    try:
        proc = _STARTER.submit(
            lambda: subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=err_theirs.fileno(),
                stderr=err_theirs.fileno(),
                pass_fds=(theirs.fileno(),),
                cwd=home,
                env=env,
                start_new_session=True,
            )
        ).result()
    except OSError as exc:
        for sock in (ours, err_ours):
            sock.close()
        shutil.rmtree(home, ignore_errors=True)
        raise JailError(f"could not start the agent's process: {exc}") from None
    finally:
        theirs.close()
        err_theirs.close()
    return Launched(ours, err_ours, proc=proc, home=home)


# -- the template --------------------------------------------------------------------------------
class Template:
    """One jail and the template process in it, forking a process per trial attempt."""

    def __init__(self, view: JailView):
        self.view = view
        self.spool = ""
        self._control: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def argv(self, control_fd: int) -> list[str]:
        from harness.sandbox.bwrap_root import system_binds

        args = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0"]
        args += ["--cap-add", "ALL", "--new-session", "--die-with-parent"]
        args += [*system_binds(), "--tmpfs", "/tmp"]
        for path in self.view.binds:
            args += ["--ro-bind", path, path]
        args += ["--bind", self.spool, SPOOL, "--proc", "/proc", "--dev", "/dev"]
        args += ["--dir", "/run/harness", "--dir", "/run/stash", "--remount-ro", "/"]
        args += ["--chdir", "/", "--", jail_python(), "-c", TEMPLATE_MAIN]
        keep = [p for p in self.view.binds if p.startswith("/tmp/")]
        return [*args, str(control_fd), SPOOL, json.dumps(keep)]

    def start(self) -> None:
        self.spool = tempfile.mkdtemp(prefix="harness-jail-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: os.environ[k] for k in SAFE_ENV_KEYS if k in os.environ}
        env.update(
            HOME="/tmp",
            TMPDIR="/tmp",
            PYTHONPATH=os.pathsep.join(search_path()),
            PYTHONNOUSERSITE="1",
            PYTHONDONTWRITEBYTECODE="1",
        )
        argv = self.argv(theirs.fileno())
        try:
            self._proc = _STARTER.submit(
                lambda: subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    pass_fds=(theirs.fileno(),),
                    env=env,
                    start_new_session=True,
                )
            ).result()
        except OSError as exc:
            ours.close()
            raise JailError(f"bubblewrap did not start: {exc}") from None
        finally:
            theirs.close()
        self._control = ours
        ours.settimeout(STARTUP_S)
        try:
            ready = ours.recv(4096)
        except (TimeoutError, OSError):
            ready = b""
        ours.settimeout(None)
        if not ready.startswith(b'{"op": "ready"}'):
            assert self._proc is not None
            self._proc.kill()
            _out, err = self._proc.communicate()
            self.close()
            tail = err.decode("utf-8", "replace").strip()[-400:]
            raise JailError(f"the agent jail did not start: {tail or 'no output'}")
        assert self._proc is not None and self._proc.stderr is not None
        self._proc.stderr.close()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and not self.gone()

    def gone(self, wait_s: float = 0.0) -> bool:
        """The template ended (its end of the control socket closed): every process in the
        jail ends with it. Instant unless ``wait_s``: the template never writes after it is
        ready, so the socket turns readable only when it closes."""
        control = self._control
        if control is None:
            return True
        poller = select.poll()
        poller.register(control, select.POLLIN | select.POLLHUP | select.POLLERR)
        return bool(poller.poll(int(wait_s * 1000)))

    def socket_dir(self) -> tuple[str, str]:
        """A new directory in the spool for one trial's proxy socket: (host path, name)."""
        name = uuid.uuid4().hex[:16]
        path = os.path.join(self.spool, name)
        os.mkdir(path, 0o755)
        return path, name

    def spawn(self, socket_dir: str | None = None) -> Launched:
        """Ask the template for a new process; it says hello on the returned channel."""
        ours, theirs, err_ours, err_theirs = _pairs()
        request = {"socket_dir": socket_dir, "home_size": HOME_SIZE}
        try:
            with self._lock:
                if self._control is None:
                    raise JailError("the agent jail is closed")
                socket.send_fds(
                    self._control,
                    [json.dumps(request).encode()],
                    [theirs.fileno(), err_theirs.fileno()],
                )
        except OSError as exc:
            ours.close()
            err_ours.close()
            raise JailError(f"the agent jail is gone ({exc})") from None
        finally:
            theirs.close()
            err_theirs.close()
        return Launched(ours, err_ours)

    def close(self) -> None:
        with self._lock:
            if self._control is not None:
                self._control.close()
                self._control = None
        if self._proc is not None:
            with suppress(OSError, subprocess.TimeoutExpired):
                os.killpg(self._proc.pid, signal.SIGKILL)
            with suppress(OSError, subprocess.TimeoutExpired):
                self._proc.wait(10)
        if self.spool:
            shutil.rmtree(self.spool, ignore_errors=True)


_TEMPLATES: dict[JailView, Template] = {}
_TEMPLATES_LOCK = threading.Lock()


def template(view: JailView) -> Template:
    """The running template of ``view`` (started, or restarted if it died)."""
    with _TEMPLATES_LOCK:
        current = _TEMPLATES.get(view)
        if current is not None and current.alive:
            return current
        if current is not None:
            current.close()
        started = Template(view)
        started.start()
        _TEMPLATES[view] = started
        return started


def close_templates() -> None:
    """Stop every jail this process started (at the end of a run, and at exit)."""
    with _TEMPLATES_LOCK:
        for running in _TEMPLATES.values():
            running.close()
        _TEMPLATES.clear()


atexit.register(close_templates)


__all__ = [
    "HOME_SIZE",
    "JailError",
    "JailView",
    "Launched",
    "Template",
    "close_templates",
    "launch_plain",
    "template",
    "unavailable",
    "view_for",
]
