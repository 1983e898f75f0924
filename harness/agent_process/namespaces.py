"""The Linux calls that put one agent process in namespaces of its own, made from Python
(``ctypes``) inside the agent jail's template process (``template``), which holds every
capability of the jail's user namespace and gives them all up here.

``isolate`` runs in a freshly forked child of the template: new mount, PID, network, IPC
and UTS namespaces; a private mount tree with a fresh ``/tmp`` and the trial's proxy socket
directory, and nothing else of the jail's spool. ``enter`` runs in that child's own child,
PID 1 of the new PID namespace (when it exits the kernel kills every process left in the
namespace): a ``/proc`` of that namespace only (its kernel knobs read-only, as bubblewrap
does), loopback up, then every capability dropped for good (bounding set, ambient set,
securebits locked, ``no_new_privs``), checked from ``/proc/self/status`` before returning.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 24, 28, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECURE_ALL_LOCKED = 0x2F
"""NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED and their locks: uid 0 gains nothing on exec."""
_CAP_V3 = 0x20080522
_SIOCSIFFLAGS = 0x8914
_IFF_UP_RUNNING = 0x1 | 0x40
STASH = "/run/stash"
"""Where ``isolate`` briefly keeps the jail's ``/tmp`` while it mounts a fresh one."""
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus")
"""Kernel knobs under ``/proc`` made read-only (bubblewrap's list)."""

_libc = ctypes.CDLL(None, use_errno=True)


class JailError(OSError):
    """A namespace call failed: the agent cannot be isolated, so it is not started."""


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise JailError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            None if source is None else source.encode(),
            target.encode(),
            None if fstype is None else fstype.encode(),
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def bind(source: str, target: str, *, read_only: bool) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def isolate(socket_dir: str | None, spool: str, keep: list[str], home_size: str) -> None:
    """New namespaces for this process's children; its own ``/tmp`` (a tmpfs of
    ``home_size``), in which the jail's binds under ``/tmp`` (``keep``: the agent's module,
    say) are bound again read-only; and, read-only at ``/run/harness``, its trial's
    ``socket_dir``. The spool holding every trial's socket directory is then unmounted."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    _check(_libc.unshare(flags), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    if keep:
        bind("/tmp", STASH, read_only=True)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={home_size},mode=0700")
    for path in keep:
        kept = STASH + path[len("/tmp") :]
        if os.path.isdir(kept):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        bind(kept, path, read_only=True)
    if keep:
        _check(_libc.umount2(STASH.encode(), MNT_DETACH), f"umount {STASH}")
    if socket_dir is not None:
        bind(socket_dir, "/run/harness", read_only=True)
    _check(_libc.umount2(spool.encode(), MNT_DETACH), f"umount {spool}")


def enter(hostname: str = "agent") -> None:
    """As PID 1 of the new PID namespace: its ``/proc``, loopback, then no capability."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in PROC_READ_ONLY:
        path = f"/proc/{name}"
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
            _mount(None, path, None, flags)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", _IFF_UP_RUNNING, b""))
    _check(_libc.sethostname(hostname.encode(), len(hostname)), "sethostname")
    drop_capabilities()


def drop_capabilities() -> None:
    """Give up every capability, for this process and anything it runs; raise unless
    ``/proc/self/status`` then shows none and ``no_new_privs``."""
    _check(_libc.prctl(PR_SET_SECUREBITS, SECURE_ALL_LOCKED, 0, 0, 0), "securebits")
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient set")
    header = ctypes.create_string_buffer(struct.pack("Ii", _CAP_V3, 0))
    data = ctypes.create_string_buffer(24)  # two zeroed __user_cap_data_struct
    _check(_libc.capset(header, data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    status = capability_status()
    if any(int(status[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")):
        raise JailError(0, f"capabilities left after dropping them: {status}")
    if status.get("NoNewPrivs") != "1":
        raise JailError(0, "no_new_privs did not hold")


def capability_status() -> dict[str, str]:
    """The ``Cap*`` and ``NoNewPrivs`` lines of ``/proc/self/status``."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key.startswith("Cap") or key == "NoNewPrivs":
                out[key] = value.strip()
    return out


__all__ = ["JailError", "bind", "capability_status", "drop_capabilities", "enter", "isolate"]
