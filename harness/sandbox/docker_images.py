"""Docker images for environments: build or resolve once, bake the files in, pin, lock.

Everything here is synchronous Docker SDK code; ``DockerProvider`` runs it in a worker
thread. The pinning rule (DESIGN rule 1): an environment resolves to ONE immutable image id
(``sha256:...``) at run start, and every sandbox of the run is created from that id, never
from a tag, so rebuilding a tag mid-run changes nothing.

Pinning steps for one environment:

1. **recipe image**: ``image.dockerfile`` is built with the environment dir as context
   (tagged ``harness-env/<name>:<version>``); ``image.ref`` is resolved locally (pulled once
   when missing and pulling is allowed).
2. **workdir and files**: the workdir must belong to the environment's user (root when
   none is declared: sandboxes drop all capabilities, so even root cannot write into a
   directory it does not own) and hold the environment's ``files``. When the recipe image
   already has both (recommended: the Dockerfile COPYs the files with ``--chown``), it is
   used as is. Otherwise they are baked into a derived image (one ``put_archive`` +
   ``commit``), labelled with a key over (recipe image id, files digest, workdir, owner)
   and reused by later runs, so the pinned id is stable across runs. Trials then start
   with everything in place: no per-trial copy.
"""

from __future__ import annotations

import hashlib
import io
import logging
import posixpath
import re
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import EnvironmentBuildError, SandboxError
from harness.sandbox.base import Environment
from harness.sandbox.workproduct import AGENT_UID

log = logging.getLogger(__name__)

FILES_KEY_LABEL = "harness.files.key"
ENV_LABEL = "harness.environment"
BAKE_VERSION = "3"  # part of the reuse key: bump when what a derived image holds changes


@dataclass(frozen=True)
class PinnedImage:
    """What ``prepare`` learned about one environment's image."""

    environment: str
    image_id: str
    """The id every sandbox is created from (recipe image, plus baked files when needed)."""
    recipe_image_id: str
    """The id the recipe (Dockerfile build or ref) resolved to, before baking files."""
    uid: int = 0
    gid: int = 0
    """Owner given to files the harness writes (the environment's user, else root)."""
    files_digest: str | None = None
    base_images: dict[str, dict[str, Any]] = field(default_factory=dict)
    """For a Dockerfile: each FROM image -> {"id", "digests"}; for a ref: the ref itself."""
    agents: dict[str, dict[str, str]] = field(default_factory=dict)
    """``AgentBuild.key`` -> {"npm": its spec, "image_id": this image plus that CLI}, for the
    ready-made agent CLIs the run's arms need (``docker_agent_images``)."""

    def all_image_ids(self) -> list[str]:
        """Every image a sandbox of this environment may start from (worker nodes need all)."""
        return [self.image_id, *(a["image_id"] for a in self.agents.values())]


# ----------------------------------------------------------------------------- helpers
def slug(text: str) -> str:
    """A lowercase string usable as a Docker repository path component or tag."""
    s = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-._")
    return s[:100] or "env"


def files_manifest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every regular file under ``root`` (symlinks: their target)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "link:" + str(p.readlink())
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def files_digest(root: Path) -> str:
    h = hashlib.sha256()
    for rel, digest in files_manifest(root).items():
        mode = (root / rel).lstat().st_mode & 0o777
        h.update(f"{rel}\0{digest}\0{mode:o}\n".encode())
    return h.hexdigest()


def tar_directory(
    src: Path, arc_prefix: str, uid: int, gid: int, dir_entries: Sequence[str] = ()
) -> bytes:
    """An in-memory tar of ``src``'s contents under ``arc_prefix`` (a path relative to '/'),
    every member owned by ``uid:gid``. ``dir_entries`` are extra directory members (the
    parents of ``arc_prefix`` that should belong to the same owner)."""
    buf = io.BytesIO()

    def own(ti: tarfile.TarInfo) -> tarfile.TarInfo:
        ti.uid, ti.gid, ti.uname, ti.gname = uid, gid, "", ""
        return ti

    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in dir_entries:
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
            tar.addfile(own(ti))
        for p in sorted(src.rglob("*")):
            if "__pycache__" in p.parts:
                continue
            arc = posixpath.join(arc_prefix, p.relative_to(src).as_posix())
            tar.add(str(p), arcname=arc, recursive=False, filter=own)
    return buf.getvalue()


def parents_below(workdir: str, path: str) -> list[str]:
    """Directories strictly below ``workdir`` down to ``path`` (inclusive), as tar names
    relative to '/'. Empty when ``path`` is not under ``workdir``."""
    workdir, path = posixpath.normpath(workdir), posixpath.normpath(path)
    if path == workdir or not path.startswith(workdir.rstrip("/") + "/"):
        return []
    rel = posixpath.relpath(path, workdir).split("/")
    out, cur = [], workdir
    for part in rel:
        cur = posixpath.join(cur, part)
        out.append(cur.lstrip("/"))
    return out


def _read_tar_member(chunks, name: str | None = None) -> bytes | None:
    data = b"".join(chunks)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar:
            if m.isfile() and (name is None or m.name == name):
                fh = tar.extractfile(m)
                return fh.read() if fh else b""
    return None


# ----------------------------------------------------------------------------- resolving
def _docker_errors():
    import docker.errors
    import requests.exceptions

    return docker.errors, requests.exceptions


def resolve_ref(client, env: Environment, pull: bool) -> str:
    errors, rexc = _docker_errors()
    ref = env.spec.image.ref
    assert ref is not None  # called for environments that name an image
    try:
        return client.images.get(ref).id
    except errors.ImageNotFound:
        pass
    except (errors.APIError, rexc.RequestException) as exc:
        raise SandboxError(
            f"environment '{env.name}': cannot inspect image '{ref}': {exc}"
        ) from exc
    hint = (
        " (build it offline with: bash docker/build-base.sh)"
        if ref.startswith("harness-base")
        else ""
    )
    if not pull:
        raise EnvironmentBuildError(
            f"environment '{env.name}': image '{ref}' is not present locally{hint}"
        )
    try:
        log.info("pulling %s for environment '%s'", ref, env.name)
        return client.images.pull(ref).id
    except (errors.APIError, rexc.RequestException) as exc:
        raise EnvironmentBuildError(
            f"environment '{env.name}': image '{ref}' is not present locally and pulling it "
            f"failed{hint}: {exc}"
        ) from exc


def build_dockerfile(client, env: Environment) -> str:
    errors, rexc = _docker_errors()
    dockerfile = env.spec.image.dockerfile
    assert dockerfile is not None  # called for environments built from a Dockerfile
    if not (env.root / dockerfile).is_file():
        raise EnvironmentBuildError(
            f"environment '{env.name}': Dockerfile '{dockerfile}' not found in {env.root}"
        )
    tag = f"harness-env/{slug(env.name)}:{slug(env.spec.version)}"
    log.info("building image for environment '%s' (%s)", env.name, tag)
    try:
        image, _logs = client.images.build(
            path=str(env.root),
            dockerfile=dockerfile,
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            labels={ENV_LABEL: env.name},
        )
    except errors.BuildError as exc:
        tail = "".join(str(item.get("stream") or item.get("error") or "") for item in exc.build_log)
        tail = "\n".join(tail.strip().splitlines()[-15:])
        raise EnvironmentBuildError(
            f"environment '{env.name}': image build failed: {exc.msg}\n{tail}"
        ) from exc
    except errors.APIError as exc:
        if exc.is_client_error():
            raise EnvironmentBuildError(
                f"environment '{env.name}': image build rejected: {exc.explanation or exc}"
            ) from exc
        raise SandboxError(f"environment '{env.name}': image build failed: {exc}") from exc
    except rexc.RequestException as exc:
        raise SandboxError(f"environment '{env.name}': Docker daemon unreachable: {exc}") from exc
    return image.id


_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE | re.MULTILINE)


def base_images(client, env: Environment) -> dict[str, dict[str, Any]]:
    """The images a recipe starts from, with their local ids and registry digests."""
    errors, _ = _docker_errors()
    if env.spec.image.ref:
        refs = [env.spec.image.ref]
    else:
        dockerfile = env.spec.image.dockerfile
        assert dockerfile is not None  # an image is a ref or a Dockerfile (validated)
        text = (env.root / dockerfile).read_text(errors="replace")
        refs, stages = [], set()
        for m in _FROM.finditer(text):
            ref, alias = m.group(1), m.group(2)
            if ref.lower() != "scratch" and ref not in stages and "$" not in ref:
                refs.append(ref)
            if alias:
                stages.add(alias)
    out: dict[str, dict[str, Any]] = {}
    for ref in refs:
        try:
            img = client.images.get(ref)
            out[ref] = {"id": img.id, "digests": sorted(img.attrs.get("RepoDigests") or [])}
        except errors.DockerException:
            out[ref] = {"id": None, "digests": []}
    return out


class _ChunkReader(io.RawIOBase):
    """A file-like view of a chunk iterator, so a tar stream is read only as far as needed."""

    def __init__(self, chunks):
        self._chunks, self._buf = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n], self._buf = self._buf[:n], self._buf[n:]
        return n


def _owner(container, env: Environment) -> tuple[int, int]:
    """uid:gid of the environment's user inside the image: the unprivileged uid 1000 unless
    it declares another user (``root`` opts in to root)."""
    errors, _ = _docker_errors()
    user = env.spec.user
    if not user:
        return AGENT_UID, AGENT_UID
    if user in ("root", "0", "0:0"):
        return 0, 0
    name, _, group = user.partition(":")
    if name.isdigit() and (not group or group.isdigit()):
        return int(name), int(group or name)
    try:
        stream, _stat = container.get_archive("/etc/passwd")
        passwd = (_read_tar_member(stream) or b"").decode(errors="replace")
    except errors.NotFound:
        passwd = ""
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) >= 4 and fields[0] == name:
            return int(fields[2]), int(fields[3])
    raise EnvironmentBuildError(
        f"environment '{env.name}': user '{name}' does not exist in its image "
        "(create it in the Dockerfile; harness-base:latest has 'agent')"
    )


def _workdir_state(container, workdir: str, manifest: dict[str, str]):
    """(the one owner uid:gid of the workdir and everything in it, or None when the workdir
    is missing or has several owners; whether it holds ``manifest``)."""
    errors, _ = _docker_errors()
    try:
        stream, _stat = container.get_archive(workdir.rstrip("/") + "/.")
    except errors.NotFound:
        return None, False
    found: dict[str, str] = {}
    owners = set()
    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(stream)), mode="r|") as tar:
        for m in tar:
            owners.add((m.uid, m.gid))
            rel = m.name.split("/", 1)[1] if "/" in m.name else ""
            if rel not in manifest:
                continue
            if m.issym():
                found[rel] = "link:" + m.linkname
            elif m.isfile():
                fh = tar.extractfile(m)
                found[rel] = hashlib.sha256(fh.read() if fh else b"").hexdigest()
    # Drain the rest so the HTTP connection goes back to the pool cleanly.
    for _ in stream:
        pass
    return (owners.pop() if len(owners) == 1 else None), found == manifest


def _reowned_workdir(
    container, workdir: str, uid: int, gid: int
) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    """Every entry under the image's workdir, owned by ``uid:gid`` (the bake puts them back
    so the agent's user owns what the image put there, e.g. by ``RUN`` as root)."""
    errors, _ = _docker_errors()
    try:
        stream, _stat = container.get_archive(workdir.rstrip("/") + "/.")
    except errors.NotFound:
        return []
    arc = workdir.strip("/")
    out = []
    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(stream)), mode="r|") as tar:
        for m in tar:
            rel = m.name.split("/", 1)[1] if "/" in m.name else ""
            if not rel:
                continue
            fh = tar.extractfile(m) if m.isreg() else None
            data = fh.read() if fh else None
            m.name = f"{arc}/{rel}"
            if m.islnk():
                m.linkname = f"{arc}/{m.linkname.split('/', 1)[1]}"
            m.uid, m.gid, m.uname, m.gname = uid, gid, "", ""
            out.append((m, data))
    for _ in stream:
        pass
    return out


def _finish_image(client, env: Environment, recipe_id: str):
    """(image id, uid, gid, files digest): ``recipe_id`` with the workdir owned by the
    environment's user and holding its files, baking a derived image only when needed."""
    files = env.files_dir
    digest, manifest = None, {}
    if env.spec.files:
        if not files or not files.is_dir():
            raise EnvironmentBuildError(
                f"environment '{env.name}': files dir '{env.spec.files}' does not exist"
            )
        digest, manifest = files_digest(files), files_manifest(files)
    workdir = env.spec.workdir
    container = client.containers.create(
        recipe_id, entrypoint=["true"], command=[], network_mode="none"
    )
    try:
        uid, gid = _owner(container, env)
        if posixpath.normpath(workdir) == "/":
            # The root is no work dir to re-own: baking it would hand the environment's user
            # the whole file system (a Harbor task without WORKDIR). Used as it is.
            if manifest:
                raise EnvironmentBuildError(
                    f"environment '{env.name}': its files cannot go into a work dir of / "
                    "(set workdir to a directory of its own)"
                )
            return recipe_id, uid, gid, digest
        key = hashlib.sha256(
            f"{BAKE_VERSION}\0{recipe_id}\0{digest}\0{workdir}\0{uid}:{gid}".encode()
        ).hexdigest()
        existing = client.images.list(filters={"label": f"{FILES_KEY_LABEL}={key}"})
        if existing:
            return existing[0].id, uid, gid, digest
        owner, has_files = _workdir_state(container, workdir, manifest)
        if owner == (uid, gid) and has_files:
            return recipe_id, uid, gid, digest
        # Bake: the workdir entry re-owns (or creates) it for the user, what the image holds
        # there is re-owned for it, and the files go inside.
        arc = workdir.strip("/")
        existing_entries = _reowned_workdir(container, workdir, uid, gid)
        if existing_entries:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as out:
                for m, data in existing_entries:
                    out.addfile(m, io.BytesIO(data) if data is not None else None)
            container.put_archive("/", buf.getvalue())
        if files is not None and manifest:
            tar = tar_directory(files, arc, uid, gid, dir_entries=[arc])
        else:
            tar = _dir_only_tar(arc, uid, gid)
        container.put_archive("/", tar)
        config = dict(client.images.get(recipe_id).attrs.get("Config") or {})
        config["Labels"] = {
            **(config.get("Labels") or {}),
            FILES_KEY_LABEL: key,
            ENV_LABEL: env.name,
        }
        baked = container.commit(
            repository=f"harness-env/{slug(env.name)}",
            tag=f"files-{key[:12]}",
            message=f"harness: workdir and files of environment '{env.name}'",
            pause=False,
            conf=config,
        )
        log.info("environment '%s': baked its workdir into %s", env.name, baked.id[:19])
        return baked.id, uid, gid, digest
    finally:
        container.remove(force=True)


def _dir_only_tar(arc: str, uid: int, gid: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        ti = tarfile.TarInfo(arc)
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
        ti.uid, ti.gid = uid, gid
        tar.addfile(ti)
    return buf.getvalue()


def pin_environment(client, env: Environment, pull: bool = True) -> PinnedImage:
    """Build or resolve ``env``'s image and return its immutable id (see module doc)."""
    errors, rexc = _docker_errors()
    if env.spec.image.dockerfile:
        recipe_id = build_dockerfile(client, env)
    else:
        recipe_id = resolve_ref(client, env, pull)
    try:
        image_id, uid, gid, digest = _finish_image(client, env, recipe_id)
        bases = base_images(client, env)
    except (errors.APIError, rexc.RequestException) as exc:
        raise SandboxError(f"environment '{env.name}': preparing its image failed: {exc}") from exc
    return PinnedImage(
        environment=env.name,
        image_id=image_id,
        recipe_image_id=recipe_id,
        uid=uid,
        gid=gid,
        files_digest=digest,
        base_images=bases,
    )


# ----------------------------------------------------------------------------- lock file
def lock_entry(env: Environment, pinned: PinnedImage) -> dict[str, Any]:
    """One environment's entry of a lock file (plain JSON/YAML-serialisable data)."""
    recipe = (
        {"dockerfile": env.spec.image.dockerfile}
        if env.spec.image.dockerfile
        else {"ref": env.spec.image.ref}
    )
    return {
        "version": env.spec.version,
        "recipe": recipe,
        "image_id": pinned.image_id,
        "recipe_image_id": pinned.recipe_image_id,
        "base_images": pinned.base_images,
        "files_digest": pinned.files_digest,
        "agents": {key: dict(agent) for key, agent in sorted(pinned.agents.items())},
    }


# ----------------------------------------------------------------------------- shipping
def export_image(client, image_id: str) -> bytes:
    """The image as a ``docker save`` archive, named by its tags so they come along."""
    image = client.images.get(image_id)
    named = image.tags[0] if image.tags else False
    return b"".join(image.save(named=named))


def import_image(client, archive: bytes, image_id: str) -> None:
    """``docker load`` an archive from ``export_image`` and check it holds ``image_id``:
    the same id on every node, or the trial must not run (rule 1: pinned images)."""
    errors, _ = _docker_errors()
    client.images.load(archive)
    try:
        client.images.get(image_id)
    except errors.ImageNotFound:
        raise RuntimeError(f"the shipped archive did not contain image {image_id[:19]}") from None
