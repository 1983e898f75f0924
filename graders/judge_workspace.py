"""The agent's work dir as data, for a judge that explores it with tools.

After the agent's turn its work dir leaves the sandbox as a tar archive
(``harness.sandbox.workproduct``); this view reads that archive on the host and nothing
else: no file of the host is opened by a path the judge or the agent chose, nothing is
extracted and nothing runs. The judge names paths relative to the work dir; an absolute
path, a ``..`` component, or a path through a symbolic link is refused with a sentence the
judge can read. Links are shown as links (with their target) and never followed; a hard link
reads the member it names inside the archive. Every reply is text, cut to the caller's byte
cap, so an agent that left huge or binary files cannot flood the judge.
"""

from __future__ import annotations

import posixpath
import tarfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness.sandbox.workproduct import WorkProduct, text

LIST_LIMIT = 500
"""Entries ``list_files`` shows at most (then says how many more there are)."""
GREP_LIMIT = 100
"""Matching lines ``grep`` shows at most."""
GREP_FILE_BYTES = 1_000_000
"""Bytes of each file ``grep`` searches (a longer file is searched in its first part, and
the reply says so)."""
LINE_CHARS = 240
"""Characters of a matching line ``grep`` shows."""
BINARY_SNIFF = 8192
"""Bytes looked at to tell a binary file (a NUL among them, as git and grep decide)."""


@dataclass(frozen=True)
class Entry:
    """One member of the work dir in the archive."""

    kind: str
    """file, dir, link (symbolic), hardlink, fifo or device"""
    size: int
    target: str | None
    """A symbolic link's target as the agent wrote it; a hard link's member name."""
    info: tarfile.TarInfo


class PathRefused(ValueError):
    """A path the judge may not read (outside the work dir, through a link, absent)."""


class WorkView:
    """The work dir of one trial, read from its archive (see the module doc)."""

    def __init__(self, product: WorkProduct):
        self.product = product
        self.prefix = product.workdir.strip("/")
        self.entries: dict[str, Entry] = {}
        self._by_member: dict[str, Entry] = {}
        for member, _ in product.members():
            name = member.name.rstrip("/")
            rel = _inside(name, self.prefix)
            if rel is None:
                continue
            entry = Entry(_kind(member), member.size, _target(member), member)
            self._by_member[name] = entry
            if rel != ".":
                self.entries[text(rel)] = entry

    # ------------------------------------------------------------------------- paths
    def resolve(self, path: object) -> str:
        """``path`` as a key of the work dir ('.' the work dir itself), or ``PathRefused``."""
        if not isinstance(path, str) or not path.strip():
            return "."
        if "\x00" in path:
            raise PathRefused("a path with a NUL byte names nothing")
        if path.startswith("/"):
            raise PathRefused(
                f"{path}: absolute paths are outside the work dir; name a path relative to it"
            )
        if ".." in PurePosixPath(path).parts:
            raise PathRefused(f"{path}: '..' leads outside the work dir; it is not followed")
        rel = posixpath.normpath(path)
        parts = PurePosixPath(rel).parts
        for i in range(1, len(parts)):
            above = "/".join(parts[:i])
            entry = self.entries.get(above)
            if entry is not None and entry.kind == "link":
                raise PathRefused(
                    f"{path}: {above} is a symbolic link (to {entry.target}); links are "
                    "shown, never followed"
                )
        if rel != "." and rel not in self.entries:
            raise PathRefused(f"{path}: no such file or directory in the work dir")
        return rel

    # ------------------------------------------------------------------------- tools
    def list_files(self, path: object = ".") -> str:
        """Every entry at and below ``path``: files with their size, dirs with '/', links
        with their target (not followed)."""
        rel = self.resolve(path)
        if rel != "." and self.entries[rel].kind != "dir":
            return _line(rel, self.entries[rel])
        below = [k for k in sorted(self.entries) if rel == "." or k.startswith(rel + "/")]
        if not below:
            return "the work dir is empty" if rel == "." else f"{rel}: an empty directory"
        lines = [_line(k, self.entries[k]) for k in below[:LIST_LIMIT]]
        if len(below) > LIST_LIMIT:
            lines.append(f"[... {len(below) - LIST_LIMIT} more entries not listed]")
        return "\n".join(lines)

    def read_file(self, path: object, max_bytes: int, offset: int = 0) -> str:
        """Up to ``max_bytes`` of a regular file from byte ``offset``, as UTF-8 text (bad
        bytes replaced); says when more of the file is left."""
        rel = self.resolve(path)
        entry = self.entries.get(rel)
        if entry is None or entry.kind == "dir":
            raise PathRefused(f"{rel}: a directory; list it with list_files")
        data_entry = self._data_entry(rel, entry)
        offset = max(0, offset)
        if _binary(self._read(data_entry, 0, BINARY_SNIFF)):
            return f"{rel}: a binary file of {data_entry.size} bytes (not shown as text)"
        data = self._read(data_entry, offset, max_bytes)
        shown = data.decode("utf-8", errors="replace")
        rest = data_entry.size - offset - len(data)
        if rest > 0:
            shown += (
                f"\n[... {rest} more bytes of {rel} ({data_entry.size} in all) not shown; "
                f"read on with offset {offset + len(data)}]"
            )
        return shown if shown else f"{rel}: an empty file"

    def grep(self, needle: object, path: object = ".") -> str:
        """Lines holding ``needle`` (a plain string, not a pattern) in the regular files at
        and below ``path``."""
        if not isinstance(needle, str) or not needle:
            raise PathRefused("grep needs a non-empty string to look for")
        rel = self.resolve(path)
        keys = [rel] if rel != "." and self.entries[rel].kind != "dir" else [
            k for k in sorted(self.entries) if rel == "." or k.startswith(rel + "/")
        ]  # fmt: skip
        hits: list[str] = []
        cut: list[str] = []
        for key in keys:
            entry = self.entries[key]
            if entry.kind not in ("file", "hardlink"):
                continue
            try:
                found = self._data_entry(key, entry)
            except PathRefused:
                continue
            data = self._read(found, 0, GREP_FILE_BYTES)
            if _binary(data[:BINARY_SNIFF]):
                continue
            if found.size > len(data):
                cut.append(key)
            for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if needle in line:
                    hits.append(f"{key}:{n}: {line[:LINE_CHARS]}")
                    if len(hits) >= GREP_LIMIT:
                        return "\n".join([*hits, f"[stopped at {GREP_LIMIT} matching lines]"])
        out = hits or [f"no line holds {needle!r}"]
        if cut:
            out.append(f"[searched only the first {GREP_FILE_BYTES} bytes of {', '.join(cut)}]")
        return "\n".join(out)

    # ------------------------------------------------------------------------- data
    def _data_entry(self, rel: str, entry: Entry) -> Entry:
        if entry.kind == "link":
            raise PathRefused(
                f"{rel}: a symbolic link to {entry.target}; links are shown, never followed"
            )
        if entry.kind == "hardlink":  # the same file as a member before it in the archive
            same = self._by_member.get((entry.target or "").rstrip("/"))
            if same is None or same.kind != "file":
                raise PathRefused(f"{rel}: a hard link to a file outside the work dir")
            return same
        if entry.kind != "file":
            raise PathRefused(f"{rel}: a {entry.kind}, not a regular file")
        return entry

    def _read(self, entry: Entry, offset: int, limit: int) -> bytes:
        with tarfile.open(self.product.path, mode="r:") as tar:
            stream = tar.extractfile(entry.info)
            if stream is None:
                return b""
            stream.seek(offset)
            return stream.read(max(0, limit))


def _binary(head: bytes) -> bool:
    return b"\x00" in head


def _inside(name: str, prefix: str) -> str | None:
    """``name`` relative to the work dir member ``prefix`` ('.' for the dir), or None."""
    if not prefix:
        return name or "."
    if name == prefix:
        return "."
    if name.startswith(prefix + "/"):
        return name[len(prefix) + 1 :]
    return None


def _kind(member: tarfile.TarInfo) -> str:
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    if member.issym():
        return "link"
    if member.islnk():
        return "hardlink"
    return "fifo" if member.isfifo() else "device"


def _target(member: tarfile.TarInfo) -> str | None:
    return text(member.linkname) if member.issym() or member.islnk() else None


def _line(key: str, entry: Entry) -> str:
    if entry.kind == "dir":
        return f"{key}/"
    if entry.kind == "file":
        return f"{key}  ({entry.size} bytes)"
    if entry.kind == "link":
        return f"{key} -> {entry.target}  (symbolic link, not followed)"
    if entry.kind == "hardlink":
        return f"{key}  (hard link to {entry.target})"
    return f"{key}  ({entry.kind})"
