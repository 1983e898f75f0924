"""What a grading sandbox holds besides the agent's files: the task's hidden files (the
harness's own copy) where only the grader can read or write them, a fresh HOME for the
grader, and the ``as-agent`` helper hidden tests run the code under test through.

``as-agent CMD ARGS...`` runs CMD as the unprivileged user in the current directory with a
clean environment (system PATH, a fresh HOME) and no file descriptor of the grader's but
stdin, stdout and stderr. What keeps the grader's result channel (its environment: the
nonce; its hidden files; its reward file) out of the code under test's reach:

* Docker: another uid. The grader is root holding only CAP_SETUID/CAP_SETGID (to drop);
  the code under test runs as uid 1000 with no capabilities, so it can read neither the
  grader's ``/proc/<pid>/environ`` nor its memory, nor the root-only hidden files.
* bwrap: another sandbox. The code under test runs in a nested bubblewrap sandbox with its
  own PID namespace and no ``/proc``: it sees no process of the grader's, and only the
  work dir and the read-only system of the grading sandbox (not the hidden files).
* unsafe-local: nothing (it isolates nothing; the helper only cleans the environment).
"""

from __future__ import annotations

import io
import os
import shlex
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.workproduct import AGENT_UID

GRADING_ROOT = "/opt/harness"
HIDDEN_PATH = f"{GRADING_ROOT}/hidden"
AS_AGENT_PATH = f"{GRADING_ROOT}/bin/as-agent"
GRADER_HOME = f"{GRADING_ROOT}/home"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def grader_env(
    workdir: str, hidden: str | None, as_agent: str = AS_AGENT_PATH, home: str = GRADER_HOME
) -> dict[str, str]:
    """The grader's whole environment: system PATH only, a fresh HOME, Python isolated from
    anything in the work dir or a user site (for interpreters the tests start by name)."""
    env = {
        "PATH": SYSTEM_PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HARNESS_WORKDIR": workdir,
        "HARNESS_AS_AGENT": as_agent,
    }
    if hidden is not None:
        env["HIDDEN_DIR"] = hidden
    return env


@dataclass
class GradingPlace:
    """Where and as whom grading runs in a sandbox, after ``Sandbox.install_grading``."""

    hidden_dir: str | None
    user: str | None
    """The grader's user for ``exec`` (None: the sandbox's default)."""
    env: dict[str, str] = field(default_factory=dict)


_CLOSE_FDS = (
    "for fd in /proc/$$/fd/*; do fd=${fd##*/}; case $fd in 0|1|2) ;; "
    '*) eval "exec $fd>&-" 2>/dev/null ;; esac; done\n'
)
_HEADER = (
    "#!/bin/bash\n"
    "# as-agent CMD ARGS...: run the code under test as the unprivileged user with a clean\n"
    "# environment (see harness/sandbox/grading_material.py).\n"
)

DOCKER_AS_AGENT = (
    _HEADER + _CLOSE_FDS + "exec /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "
    'HARNESS_WORKDIR="$HARNESS_WORKDIR" '
    f"/usr/bin/setpriv --reuid={AGENT_UID} --regid={AGENT_UID} --clear-groups "
    '/bin/bash -c \'export HOME="$(mktemp -d)"; exec "$@"\' as-agent "$@"\n'
)


def bwrap_as_agent(system_binds: list[str], workdir: str) -> str:
    """The helper for a bwrap grading sandbox: a nested sandbox over the work dir."""
    args = [
        "/usr/bin/env", "-i", "PATH=/usr/bin:/bin",  # bwrap itself holds nothing of the grader's
        "/usr/bin/bwrap",
        *system_binds,
        "--ro-bind", "/etc/passwd", "/etc/passwd",
        "--ro-bind", "/etc/group", "/etc/group",
        "--dev", "/dev",
        "--tmpfs", "/tmp",
        "--bind", workdir, workdir,
        "--unshare-all", "--unshare-user",
        "--uid", str(AGENT_UID), "--gid", str(AGENT_UID),
        "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--clearenv",
        "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
        "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "HARNESS_WORKDIR", workdir,
    ]  # fmt: skip
    return _HEADER + _CLOSE_FDS + f'exec {shlex.join(args)} --chdir "$PWD" -- "$@"\n'


LOCAL_AS_AGENT = (
    _HEADER
    + _CLOSE_FDS
    + 'exec /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME="$(mktemp -d)" '
    'HARNESS_WORKDIR="$HARNESS_WORKDIR" "$@"\n'
)


def docker_tar(hidden: Path | None, root: str, script: str) -> bytes:
    """The grading material as one archive for ``put_archive`` at ``/``: everything owned by
    root, the hidden files and the grader's HOME readable only by root, the helper 0755."""
    arc = root.strip("/")
    buf = io.BytesIO()
    now = int(time.time())

    def entry(name: str, mode: int, data: bytes | None = None) -> None:
        ti = tarfile.TarInfo(name)
        ti.mode, ti.mtime, ti.uid, ti.gid = mode, now, 0, 0
        if data is None:
            ti.type = tarfile.DIRTYPE
            tar.addfile(ti)
        else:
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))

    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        parts = arc.split("/")
        for i in range(1, len(parts) + 1):
            entry("/".join(parts[:i]), 0o755)
        entry(f"{arc}/bin", 0o755)
        entry(f"{arc}/bin/as-agent", 0o755, script.encode())
        entry(f"{arc}/home", 0o700)
        if hidden is not None:
            entry(f"{arc}/hidden", 0o700)
            for path in sorted(hidden.rglob("*")):
                name = f"{arc}/hidden/{path.relative_to(hidden).as_posix()}"
                if path.is_symlink():
                    continue  # hidden material is files; a link could point anywhere
                if path.is_dir():
                    entry(name, 0o700)
                else:
                    mode = 0o700 if os.access(path, os.X_OK) else 0o600
                    entry(name, mode, path.read_bytes())
    return buf.getvalue()
