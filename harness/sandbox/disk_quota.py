"""Per-trial disk quotas: the trial's host directory is a tmpfs of ``limits.disk`` bytes.

Both isolated backends keep everything a trial may write in one host directory of its own
(``bwrap``: its work dir and ``/tmp``; ``docker``: a copy of each writable place of the
image, bind-mounted over that place, see ``docker_quota``). When the harness may mount (it
runs as root), that directory is a tmpfs of ``limits.disk`` bytes: a trial that fills it
gets ENOSPC in its own sandbox, the host's disk is never written, and the other trials do
not notice. tmpfs is memory: what the agent writes there is charged to its own cgroup, so
it counts against ``limits.memory`` too. ``mechanism`` decides once per process; ``none``
(no permission to mount) leaves the quota unenforced, and the providers say so.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import tempfile
from pathlib import Path

from harness.config.base import parse_bytes

log = logging.getLogger(__name__)

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def mount(root: Path, size: int) -> None:
    """Mount a tmpfs of ``size`` bytes (mode 0700, nosuid, nodev) on the empty ``root``."""
    options = f"size={size},mode=0700".encode()
    if _libc().mount(b"tmpfs", os.fsencode(root), b"tmpfs", _MS_NOSUID | _MS_NODEV, options):
        err = ctypes.get_errno()
        raise OSError(err, f"mounting a {size}-byte tmpfs on {root}: {os.strerror(err)}")


def unmount(root: Path) -> None:
    """Detach the tmpfs on ``root`` if there is one (its contents go with it)."""
    if os.path.ismount(root):
        _libc().umount2(os.fsencode(root), _MNT_DETACH)


def mount_quota(root: Path, size: str) -> None:
    """Make the empty trial directory ``root`` a tmpfs of ``size`` (``limits.disk``)."""
    mount(root, parse_bytes(size))


def mechanism_for(backend: str) -> str:
    """``mechanism()``, saying once (for ``backend``'s provider) when it is ``none``."""
    found = mechanism()
    if found == "none":
        log.warning(
            "sandbox '%s': this process may not mount a tmpfs (run as root for it): the "
            "disk quota (limits.disk) is NOT enforced",
            backend,
        )
    return found


def mechanism() -> str:
    """``tmpfs`` when this process may mount one (tried once), else ``none``."""
    if os.geteuid() != 0:
        return "none"
    probe = Path(tempfile.mkdtemp(prefix="harness-quota-probe-"))
    try:
        mount(probe, 1 << 20)
    except OSError:
        return "none"
    else:
        unmount(probe)
        return "tmpfs"
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


__all__ = ["mechanism", "mechanism_for", "mount", "mount_quota", "unmount"]
