"""The per-trial disk quota of the ``docker`` backend: every place of the image a user other
than root may write lives, for one trial, in that trial's quota directory on the host.

Docker caps a container's writable layer only on storage drivers that support
``--storage-opt size`` (overlay2 over xfs mounted with ``pquota``, btrfs, zfs); overlay2 over
ext4, Docker's usual setup, refuses it. Docker's own tmpfs mounts are no way round: its
archive API (``put_archive``, ``get_archive``: how the harness copies files in and reads
them out) does not see inside them. So:

* once per environment, ``survey`` lists the image's writable places (the work dir;
  world-writable directories such as ``/tmp``, ``/var/tmp``, ``/run/lock``; directories
  owned by uids from 1000 up, such as a user's home) and copies their contents out of the
  image into one host file;
* per trial, ``TrialDisk`` makes a host directory, mounts a tmpfs of ``limits.disk`` bytes on
  it (``disk_quota``), unpacks each place's contents into a subdirectory with the place's own
  mode and owner, and bind-mounts each over its place. One quota holds for all of a trial's
  places together; a trial that fills it gets ENOSPC alone; the files survive a restart of
  the container; the directory is unmounted when the trial ends.

This needs the harness to run as root on the daemon's own host (``host_binds_work`` checks
that a bind-mounted host directory is what the container sees); elsewhere the quota is not
enforced and the provider says so. A process running as root in the container could still
write elsewhere in its writable layer (see ``docs/sandboxes.md``).
"""

from __future__ import annotations

import io
import logging
import os
import posixpath
import shutil
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from harness.config.base import parse_bytes
from harness.errors import SandboxError
from harness.sandbox import disk_quota, trial_dirs

log = logging.getLogger(__name__)

_FIND = "find / -xdev -type d \\( -perm -0002 -o -uid +999 \\) -print -prune 2>/dev/null; exit 0"


@dataclass(frozen=True)
class Place:
    """One writable directory of the image: its path, mode and owner there."""

    path: str
    mode: int
    uid: int
    gid: int


@dataclass
class WritablePlaces:
    """An image's writable places and the host file holding their contents: one tar whose
    members are ``<index>/<path inside the place>``."""

    places: list[Place]
    content: Path


class TrialDisk:
    """One trial's quota directory: a tmpfs of ``size`` bytes holding a copy of each place."""

    def __init__(self, places: WritablePlaces, size: int, base: str | None = None):
        self.places = places
        self.root = trial_dirs.make_trial_dir("harness-quota", base)
        try:
            disk_quota.mount(self.root, size)
            with tarfile.open(places.content) as tar:
                tar.extractall(self.root, numeric_owner=True, filter="fully_trusted")
            for i, place in enumerate(places.places):
                target = self.root / str(i)
                target.mkdir(exist_ok=True)
                os.chown(target, place.uid, place.gid)
                os.chmod(target, place.mode)
        except BaseException:
            self.remove()
            raise

    def binds(self) -> list[str]:
        """HostConfig ``Binds``: each place's copy over the place itself."""
        return [
            f"{self.root / str(i)}:{place.path}:rw" for i, place in enumerate(self.places.places)
        ]

    def remove(self) -> None:
        """Unmount the tmpfs (its contents go with it) and remove the directory."""
        disk_quota.unmount(self.root)
        shutil.rmtree(self.root, ignore_errors=True)


class Quotas:
    """A Docker provider's disk quotas: whether this host can enforce them (decided at the
    first sandbox, said once), each environment's writable places (surveyed once), and the
    quota directory of each container it created (removed with the container)."""

    def __init__(self, api: Any, run: Any, errors: tuple[type[BaseException], ...]):
        self._api = api
        self._run = run
        """The provider's bounded daemon call: ``run(kind, fn, *args)``."""
        self._errors = errors
        self.mechanism: str | None = None
        """``tmpfs`` or ``none``; None until the first sandbox."""
        self._places: dict[str, WritablePlaces] = {}
        self._cache: Path | None = None
        self._lock = anyio.Lock()
        self._disks: dict[str, TrialDisk] = {}
        """Container name (while it is created) or id -> its trial's quota directory."""

    async def disk(self, environment: Any, image_id: str, size: str) -> TrialDisk | None:
        """A new trial's quota directory, or None when this host cannot enforce quotas."""
        env, workdir = environment.name, environment.spec.workdir
        async with self._lock:
            if self.mechanism is None:
                binds = await self._run("build", host_binds_work, self._api, image_id)
                self.mechanism = "tmpfs" if binds and disk_quota.mechanism() == "tmpfs" else "none"
                if self.mechanism == "none":
                    log.warning(
                        "sandbox 'docker': the disk quota (limits.disk) is NOT enforced: it "
                        "needs the harness to run as root on the Docker daemon's host"
                    )
            if self.mechanism == "none":
                return None
            if env not in self._places:
                if self._cache is None:
                    self._cache = await anyio.to_thread.run_sync(cache_dir)
                try:
                    self._places[env] = await self._run(
                        "build", survey, self._api, image_id, workdir, self._cache
                    )
                except self._errors as exc:
                    raise SandboxError(
                        f"environment '{env}': finding its writable places failed: {exc}"
                    ) from exc
        try:
            return await anyio.to_thread.run_sync(TrialDisk, self._places[env], parse_bytes(size))
        except OSError as exc:  # the image's own files do not fit, or the host refused
            raise SandboxError(f"making a {size} disk quota for '{env}' failed: {exc}") from exc

    @staticmethod
    def gc() -> list[str]:
        """Synchronous: the quota directories killed runs left on this host, removed."""
        return [str(p) for p in trial_dirs.gc(None, ("harness-quota",))]

    def keep(self, container: str, disk: TrialDisk | None) -> None:
        """Remember ``disk`` as the quota directory of ``container`` (a name or an id)."""
        if disk is not None:
            self._disks[container] = disk

    def rename(self, name: str, cid: str) -> None:
        """The container created under ``name`` has the id ``cid``."""
        if name in self._disks:
            self._disks[cid] = self._disks.pop(name)

    async def release(self, container: str) -> None:
        """The container is gone (or abandoned): remove its quota directory. A container
        still running keeps its files until it ends (the tmpfs is detached lazily)."""
        disk = self._disks.pop(container, None)
        if disk is not None:
            await anyio.to_thread.run_sync(disk.remove)

    async def close(self) -> None:
        """Remove every quota directory left (of containers whose creation failed) and the
        copies of the writable places."""
        for container in list(self._disks):
            await self.release(container)
        if self._cache is not None:
            await anyio.to_thread.run_sync(shutil.rmtree, self._cache, True)


def survey(api: Any, image_id: str, workdir: str, cache: Path) -> WritablePlaces:
    """Blocking: run ``find`` in a throwaway container of ``image_id`` to list its writable
    directories (the work dir always), then copy their contents out of a second, never
    started, container into a file in ``cache``."""
    found = _run_in(api, image_id, _FIND).splitlines()
    workdir = posixpath.normpath(workdir)
    # A work dir of / (a Harbor task without WORKDIR) is no place: Docker cannot bind over
    # the root, and its writable directories are the ones ``find`` lists.
    head = [] if workdir == "/" else [workdir]
    dirs = head + sorted(
        {d for d in found if d.startswith("/") and d != "/" and not (head and _nested(d, workdir))}
    )
    dirs = [d for d in dirs if not any(_under(d, other) for other in dirs if other != d)]
    target = cache / f"places-{uuid.uuid4().hex[:12]}.tar"
    holder = api.create_container(image_id, entrypoint=["true"], network_disabled=True)["Id"]
    places: list[Place] = []
    try:
        with tarfile.open(target, "w") as out:
            for d in dirs:
                place = _copy_dir(api, holder, d, len(places), out)
                if place is not None:
                    places.append(place)
    finally:
        api.remove_container(holder, force=True, v=True)
    return WritablePlaces(places, target)


def host_binds_work(api: Any, image_id: str) -> bool:
    """Blocking: does a host directory bind-mounted into a container show its files (the
    daemon runs on this host and this process may create what it reads)?"""
    probe = Path(trial_dirs.make_trial_dir("harness-quota"))
    try:
        token = uuid.uuid4().hex
        (probe / "token").write_text(token)
        os.chmod(probe, 0o755)
        seen = _run_in(api, image_id, "cat /probe/token", binds={str(probe): "/probe"})
        return seen.strip() == token
    except Exception:  # noqa: BLE001 - any failure means: binds do not work here
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def _run_in(api: Any, image_id: str, script: str, binds: dict[str, str] | None = None) -> str:
    """Blocking: ``sh -c script`` as root in a throwaway container; its stdout."""
    host_config = api.create_host_config(
        network_mode="none", binds={h: {"bind": c, "mode": "ro"} for h, c in (binds or {}).items()}
    )
    cid = api.create_container(
        image_id, entrypoint=["sh", "-c", script], user="0", host_config=host_config
    )["Id"]
    try:
        api.start(cid)
        api.wait(cid, timeout=120)
        return api.logs(cid, stdout=True, stderr=False).decode("utf-8", "surrogateescape")
    finally:
        api.remove_container(cid, force=True, v=True)


def _copy_dir(
    api: Any, container: str, path: str, index: int, out: tarfile.TarFile
) -> Place | None:
    """Append the contents of ``path`` (in the container) to ``out`` under ``<index>/``;
    return the directory's mode and owner. None when it is gone."""
    import docker.errors

    try:
        stream, _stat = api.get_archive(container, path)
    except docker.errors.NotFound:
        return None
    place = None
    with tarfile.open(fileobj=io.BufferedReader(_Chunks(stream)), mode="r|") as tar:
        for member in tar:
            top, _, rest = member.name.partition("/")
            if place is None and not rest and member.isdir():
                place = Place(path, member.mode & 0o7777, member.uid, member.gid)
            member.name = f"{index}/{rest}" if rest else str(index)
            if member.islnk():  # hard links name a member of the same archive
                member.linkname = f"{index}/{member.linkname.partition('/')[2]}"
            out.addfile(member, tar.extractfile(member) if member.isreg() else None)
    return place


def _under(path: str, parent: str) -> bool:
    return path.startswith(parent.rstrip("/") + "/")


def _nested(a: str, b: str) -> bool:
    return a == b or _under(a, b) or _under(b, a)


class _Chunks(io.RawIOBase):
    """A readable stream over an iterator of byte chunks (a streamed archive)."""

    def __init__(self, chunks: Any):
        self._chunks = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = chunk
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def cache_dir() -> Path:
    """A host directory for one provider's copies of writable places, named after this
    process so ``gc`` removes it after a killed run."""
    return trial_dirs.make_trial_dir("harness-quota")


__all__ = [
    "Place",
    "Quotas",
    "TrialDisk",
    "WritablePlaces",
    "cache_dir",
    "host_binds_work",
    "survey",
]
