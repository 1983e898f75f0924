"""The read-only root every bwrap sandbox runs on: the host's ``/usr`` (and the top-level
links into it) and a few ``/etc`` files programs need, all read-only, plus the sandbox's own
``passwd`` and ``group``; the per-trial directory they sit in; and the check that bubblewrap
works on this host."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness.sandbox import disk_quota, trial_dirs

UID = 1000
_ETC = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "ssl",
    "ca-certificates",
    "python3",
    "python3.11",
    "mime.types",
)
_TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_PASSWD = f"root:x:0:0::/root:/usr/sbin/nologin\nsandbox:x:{UID}:{UID}::/work:/bin/bash\n"
_GROUP = f"root:x:0:\nsandbox:x:{UID}:\n"


def make_trial_root(base_dir: str | None, files: Path | None, disk: str | None = None) -> Path:
    """A fresh trial directory only this user can enter: ``work`` (a copy of the
    environment's ``files``), ``tmp``, and the sandbox's ``passwd`` and ``group``; a tmpfs
    of ``disk`` bytes (the trial's disk quota, ``disk_quota``) when given."""
    root = trial_dirs.make_trial_dir("harness-bwrap", base_dir)
    try:
        if disk is not None:
            disk_quota.mount_quota(root, disk)
        os.chmod(root, 0o700)
        (root / "work").mkdir()
        (root / "tmp").mkdir()
        (root / "passwd").write_text(_PASSWD)
        (root / "group").write_text(_GROUP)
        if files and files.is_dir():
            shutil.copytree(files, root / "work", dirs_exist_ok=True)
    except BaseException:
        remove_trial_root(root)
        raise
    return root


def remove_trial_root(root: Path) -> None:
    """Detach the trial's disk quota (if it has one) and remove the directory."""
    disk_quota.unmount(root)
    shutil.rmtree(root, ignore_errors=True)


def launch_env() -> dict[str, str]:
    """The environment ``bwrap`` itself starts with: nothing of the harness's but ``PATH``.
    bwrap's own process stays PID 1 of the sandbox, and any command in it can read PID 1's
    ``/proc/1/environ``: started with the harness's environment, that held its API keys.
    (``--clearenv`` only clears what the command itself gets.)"""
    return {"PATH": os.environ.get("PATH") or "/usr/bin:/bin"}


def bwrap_available() -> bool:
    """True when ``bwrap`` is installed and can create its namespaces on this host."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        done = subprocess.run(
            [exe, *system_binds(), "--unshare-all", "--unshare-user", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def system_binds() -> list[str]:
    """The read-only view of the host's system: /usr, the top-level links, a few /etc files."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _TOP_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    for name in _ETC:
        path = Path("/etc") / name
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    return args
