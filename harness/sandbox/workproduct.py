"""The agent's work product as data: a tar archive taken out of its sandbox after its turn.

Grading never runs anything the agent could have changed (DESIGN rule 7). What graders
need leaves the agent's sandbox as an archive, read by the backend itself (Docker's archive
API, the host directory bwrap binds), never by a command inside it; files-kind state is
computed here from that archive, on the host; and when a grader must execute code, the
archive is copied into a fresh grading sandbox (``harness.grading``).

The archive is one uncompressed tar in a host temporary file. Its members are named by
their absolute path inside the sandbox without the leading ``/`` (``work/etc/app.conf``);
symlinks stay links, modes are kept, names that are not UTF-8 are kept byte for byte
(``tarfile``'s ``surrogateescape``), and nothing in it is ever followed or executed.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NotRequired, TypedDict

MAX_STATE_DEPTH = 64
"""Deepest nesting a state document may have: states are tables of records; an agent that
makes the dump print deeper JSON broke its environment (and cannot crash the graders)."""

AGENT_UID = 1000
"""The unprivileged user agents run as (and code under test, in grading sandboxes)."""


class BadWorkProduct(ValueError):
    """The archive or a state dump is not what a correct environment yields: when it comes
    from after the agent's turn, the agent broke its environment."""


@dataclass
class WorkProduct:
    """A tar archive of paths taken out of one sandbox (see the module doc)."""

    path: Path
    workdir: str
    roots: list[str] = field(default_factory=list)
    """The absolute paths asked for (normalized), in order."""
    missing: list[str] = field(default_factory=list)
    """Those that did not exist."""

    def members(self) -> Iterator[tuple[tarfile.TarInfo, IO[bytes] | None]]:
        """Each member with a reader for its data (regular files only), in archive order."""
        try:
            with tarfile.open(self.path, mode="r:") as tar:
                for member in tar:
                    yield member, tar.extractfile(member) if member.isreg() else None
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BadWorkProduct(
                f"the archive of the sandbox's files is unreadable: {exc}"
            ) from exc

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


class WorkArchive(TypedDict):
    """Where a trial's work archive is kept (the blobs table) and how big it was."""

    blob: str | None
    """sha256 of the tar archive in ``blobs``; None when it was not kept (``note``)."""
    workdir: str
    """The work dir inside the archive (its members are absolute paths without '/')."""
    bytes: int
    note: NotRequired[str]


def absolute(workdir: str, path: str) -> str:
    """``path`` (relative to ``workdir``, or absolute) as a normalized absolute path."""
    return posixpath.normpath(posixpath.join(workdir, path))


def new_archive(prefix: str = "harness-product-") -> tuple[Path, tarfile.TarFile]:
    """A new tar file on the host to fill (PAX: long and non-UTF-8 names kept exactly)."""
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tar")
    os.close(fd)
    return Path(name), tarfile.open(name, mode="w", format=tarfile.PAX_FORMAT)


def tar_host_paths(workdir: str, paths: Iterable[str], host_of) -> WorkProduct:
    """Blocking: archive sandbox ``paths`` that live in host directories (bwrap,
    unsafe-local). ``host_of(absolute path)`` maps a sandbox path to its host path, or None
    when the sandbox has no such place. Links are archived as links, never followed; a file
    the harness cannot read raises ``BadWorkProduct`` (the agent made it so)."""
    out, tar = new_archive()
    product = WorkProduct(out, workdir)
    try:
        with tar:
            for path in paths:
                abs_path = absolute(workdir, path)
                product.roots.append(abs_path)
                host = host_of(abs_path)
                if host is None or not os.path.lexists(host):
                    product.missing.append(abs_path)
                    continue
                try:
                    tar.add(str(host), arcname=abs_path.lstrip("/") or ".", recursive=True)
                except OSError as exc:
                    raise BadWorkProduct(f"reading {abs_path} failed: {exc}") from exc
    except BaseException:
        product.close()
        raise
    return product


# ----------------------------------------------------------------------------- files state
def text(name: str) -> str:
    """A name from the archive as valid text: UTF-8 names as they are; bytes that are not
    UTF-8 (kept as surrogates) written as ``\\xNN`` escapes, so every store takes them."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "backslashreplace")


def files_state(product: WorkProduct, roots: list[str]) -> dict[str, Any]:
    """The ``files`` state of the declared ``roots`` (relative to the workdir, or absolute),
    from the archive alone: path -> type, sha256 and mode (links: their target). Keys are the
    roots as declared plus the rest of the path, as the environment's patches name them."""
    by_abs = {absolute(product.workdir, r).lstrip("/"): posixpath.normpath(r) for r in roots}
    out: dict[str, dict[str, str]] = {}
    digests: dict[str, str] = {}
    for member, data in product.members():
        name = member.name.rstrip("/")
        key = None
        for prefix, declared in by_abs.items():
            if name == prefix or name.startswith(prefix + "/") or prefix in ("", "."):
                key = declared + name[len(prefix) :] if prefix not in ("", ".") else name
                break
        if key is None:
            continue
        mode = oct(stat.S_IMODE(member.mode))
        if member.isreg():
            digest = hashlib.sha256()
            if data is not None:
                while chunk := data.read(1 << 20):
                    digest.update(chunk)
            digests[name] = digest.hexdigest()
            out[text(key)] = {"type": "file", "sha256": digests[name], "mode": mode}
        elif member.islnk():  # a hard link to a member before it: the same file
            target = member.linkname.rstrip("/")
            out[text(key)] = {"type": "file", "sha256": digests.get(target, ""), "mode": mode}
        elif member.issym():
            out[text(key)] = {"type": "link", "target": text(member.linkname)}
        elif member.isdir():
            out[text(key)] = {"type": "dir", "mode": mode}
        else:
            kind = "fifo" if member.isfifo() else "device"
            out[text(key)] = {"type": kind, "mode": mode}
    return {"files": dict(sorted(out.items()))}


def file_texts(product: WorkProduct, paths: list[str], limit: int) -> dict[str, str | None]:
    """The text of each of ``paths`` (relative to the workdir, or absolute) from the archive
    alone, by the path as given: its first ``limit`` bytes, decoded as UTF-8 (bad bytes
    replaced); None when the archive holds no regular file there (a link is never
    followed)."""
    wanted = {absolute(product.workdir, p).lstrip("/"): p for p in paths}
    out: dict[str, str | None] = dict.fromkeys(paths)
    for member, data in product.members():
        path = wanted.get(member.name.rstrip("/"))
        if path is not None and data is not None:
            out[path] = data.read(limit).decode("utf-8", errors="replace")
    return out


# ----------------------------------------------------------------------------- dumps
def depth(doc: Any, limit: int = MAX_STATE_DEPTH) -> int:
    """How deeply ``doc`` nests (iteratively, so any depth is measured safely), stopping
    early at ``limit + 1``."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            stack.extend(
                (v, level + 1) for v in (node.values() if isinstance(node, dict) else node)
            )
    return deepest


def parse_state(output: str, what: str) -> dict[str, Any]:
    """A state dump's output as a JSON object no deeper than ``MAX_STATE_DEPTH``; anything
    else raises ``BadWorkProduct`` naming ``what``."""
    try:
        doc = json.loads(output)
    except RecursionError:
        raise BadWorkProduct(f"{what} printed JSON nested too deeply to read") from None
    except ValueError as exc:
        raise BadWorkProduct(f"{what} printed invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadWorkProduct(f"{what} printed {type(doc).__name__} JSON, not an object")
    if depth(doc) > MAX_STATE_DEPTH:
        raise BadWorkProduct(f"{what} printed JSON nested over {MAX_STATE_DEPTH} levels deep")
    return doc


# ----------------------------------------------------------------------------- copying in
def reowned(
    product: WorkProduct,
    uid: int,
    gid: int,
    keep: Iterable[str] | None = None,
    workdir: str | None = None,
) -> Path:
    """Blocking: a copy of the archive with every member owned by ``uid:gid`` and without
    setuid, setgid or sticky bits (what grading sandboxes import). ``keep``: only members
    at or below these paths (relative to the product's workdir, or absolute; None: all).
    ``workdir``: the importing sandbox's, when members under the product's workdir must
    move there."""
    prefixes = None if keep is None else [absolute(product.workdir, k).strip("/") for k in keep]
    old = product.workdir.strip("/")
    new = old if workdir is None else workdir.strip("/")
    out, tar = new_archive("harness-import-")
    try:
        with tar:
            for member, data in product.members():
                name = member.name.rstrip("/")
                if prefixes is not None and not any(
                    name == p or name.startswith(p + "/") for p in prefixes
                ):
                    continue
                member.uid, member.gid, member.uname, member.gname = uid, gid, "", ""
                member.mode &= 0o777
                member.name = _moved(name, old, new)
                if member.islnk():
                    member.linkname = _moved(member.linkname.rstrip("/"), old, new)
                tar.addfile(member, data)
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return out


def _moved(name: str, old: str, new: str) -> str:
    if old != new and (name == old or name.startswith(old + "/")):
        return new + name[len(old) :]
    return name


def extract_into(product: WorkProduct, inside: str, host: Path) -> None:
    """Blocking: extract the member at sandbox path ``inside`` and those below it to the
    host path ``host`` (the grading sandbox's copy of that path). Names that would land
    outside ``host``'s directory, links followed by members below them and special files
    are refused (``BadWorkProduct``); setuid bits are dropped; links are created as links."""
    prefix, dest = inside.strip("/"), host.parent
    try:
        with tarfile.open(product.path, mode="r:") as tar:
            for member in tar:
                name = member.name.rstrip("/")
                if prefix and name != prefix and not name.startswith(prefix + "/"):
                    continue
                if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
                    continue  # FIFOs and devices: nothing a grader needs, nothing to create
                rel = host.name + name[len(prefix) :] if prefix else f"{host.name}/{name}"
                mode = member.mode & 0o777
                safe = tarfile.tar_filter(member.replace(name=rel, deep=False), str(dest))
                if member.islnk():
                    link = member.linkname.rstrip("/")
                    safe = safe.replace(linkname=host.name + link[len(prefix) :], deep=False)
                tar.extract(safe, str(dest), set_attrs=True, filter=lambda m, _p: m)
                if member.isreg() or member.isdir():
                    os.chmod(dest / rel, mode)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BadWorkProduct(
            f"copying the agent's files into the grading sandbox failed: {exc}"
        ) from exc


def replace_host_paths(product: WorkProduct, roots: list[str], workdir: str, host_of) -> None:
    """Blocking, for backends whose sandboxes live in host directories: replace each path of
    ``roots`` (relative to the workdir, or absolute) in the sandbox whose workdir is
    ``workdir`` by its copy in ``product`` (``host_of`` as in ``tar_host_paths``). A root
    that is a directory is emptied, not removed (it may be the sandbox's bound work dir)."""
    import shutil

    for root in roots:
        source = absolute(product.workdir, root)
        host = host_of(absolute(workdir, root))
        if host is None:
            continue
        host = Path(host)
        if host.is_dir() and not host.is_symlink():
            for child in host.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        elif os.path.lexists(host):
            host.unlink()
        extract_into(product, source, host)
