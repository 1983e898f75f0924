"""Per-trial host directories that say who owns them, and the collector of leftovers.

The ``bwrap`` and ``unsafe-local`` backends give every trial a fresh directory on the host.
A run killed with SIGKILL never removes them, so each directory's name carries its owner:
``<prefix>-<pid>-<pid start time>-<random>``. ``gc`` removes those whose owner process is
dead (or is another process by now: the start time differs), never a live run's, and only
this user's: on a shared machine another user's directories in the same temporary folder
are theirs to collect.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from harness.sandbox.docker_gc import _pid_start

PREFIXES = ("harness-bwrap", "harness-trial", "harness-quota")


def base_dir(base: str | None = None) -> Path:
    """Where trial directories live: ``base`` or the system's temporary directory."""
    return Path(base or tempfile.gettempdir())


def make_trial_dir(prefix: str, base: str | None = None) -> Path:
    """A new directory named after this process, for one trial."""
    pid = os.getpid()
    owner = f"{pid}-{_pid_start(pid) or 0}"
    return Path(tempfile.mkdtemp(prefix=f"{prefix}-{owner}-", dir=base_dir(base)))


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a host directory's contents into ``dest`` (merging), raising the first
    ``OSError`` as it is (``shutil.copytree`` gathers them and loses the errno: a full disk
    quota must read as ENOSPC)."""
    for top, _dirs, files in os.walk(src):
        rel = Path(top).relative_to(src)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copy2(Path(top) / name, dest / rel / name)


def _owner_dead(name: str) -> bool:
    """Is the process named in a trial directory's name gone? Unparseable names: no."""
    for prefix in PREFIXES:
        if name.startswith(prefix + "-"):
            parts = name[len(prefix) + 1 :].split("-")
            break
    else:
        return False
    if len(parts) < 3 or not parts[0].isdigit():
        return False
    pid, started = int(parts[0]), parts[1]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return started != "0" and _pid_start(pid) != started


def _mine(path: Path) -> bool:
    try:
        return path.lstat().st_uid == os.getuid()
    except OSError:
        return False


def leftovers(base: str | None = None) -> list[Path]:
    """This user's trial directories whose owner process is dead."""
    root = base_dir(base)
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    return sorted(
        p for p in entries if _owner_dead(p.name) and _mine(p) and p.is_dir() and not p.is_symlink()
    )


def gc(base: str | None = None, prefixes: tuple[str, ...] = PREFIXES) -> list[Path]:
    """Remove leftover trial directories whose name starts with one of ``prefixes`` (and
    the cgroups and disk-quota mounts named after them); return them."""
    from harness.sandbox.bwrap_limits import remove_cgroups_named
    from harness.sandbox.disk_quota import unmount

    removed = []
    for path in leftovers(base):
        if not path.name.startswith(prefixes):
            continue
        remove_cgroups_named(path.name)
        unmount(path)
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed
