"""Output a sandboxed command prints, kept within a cap while it is read.

An agent decides how much its commands print; the harness must not hold all of it (1 GB of
output once took 947 MB of harness memory, then the OOM killer). Every backend reads each
output stream through a ``Capture``: the first half of the cap and the last half are kept,
the bytes between are only counted, and the kept output says where they were cut.
"""

from __future__ import annotations

OUTPUT_LIMIT = 1 << 20
"""Bytes kept per output stream of one command: its first 512 KiB and its last 512 KiB."""

AGENT_READ_LIMIT = 64 << 20
"""Bytes of one file an agent may read through the harness (``read_file``)."""

STATE_OUTPUT_LIMIT = 64 << 20
"""Bytes a state dump may print (its JSON is kept whole, never cut; longer is an error)."""


class Capture:
    """One output stream, kept as its first ``limit // 2`` and last ``limit - limit // 2``
    bytes while it is read; ``dropped`` counts the bytes in between."""

    def __init__(self, limit: int = OUTPUT_LIMIT):
        self.limit = limit
        self._head_max = limit // 2
        self._tail_max = limit - self._head_max
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        """Bytes the stream carried."""

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self._tail_max:
            self._tail += chunk[-self._tail_max :]
            if len(self._tail) > 2 * self._tail_max:  # trimmed now and then, not per chunk
                del self._tail[: len(self._tail) - self._tail_max]

    @property
    def dropped(self) -> int:
        """Bytes not kept (0 when the whole stream fits the cap)."""
        return max(0, self.total - self._head_max - self._tail_max)

    def value(self) -> bytes:
        """The kept bytes; when some were dropped, a line in their place says how many."""
        tail = bytes(self._tail[-self._tail_max :]) if self._tail_max else b""
        if not self.dropped:
            return bytes(self._head) + tail
        note = (
            f"\n[... {self.dropped} bytes of output not kept: over the cap of {self.limit} "
            f"bytes per stream, the first {self._head_max} and last {self._tail_max} are "
            "kept ...]\n"
        )
        return bytes(self._head) + note.encode() + tail


class FileTooLarge(OSError):
    """A file read with a ``limit`` holds more bytes than that (``Sandbox.read_file``)."""

    def __init__(self, path: str, limit: int):
        super().__init__(f"{path} holds more than {limit} bytes")
        self.path, self.limit = path, limit


def read_at_most(path: str, limit: int | None) -> bytes:
    """Blocking: a host file's bytes, refusing (``FileTooLarge``) more than ``limit``."""
    with open(path, "rb") as fh:
        data = fh.read() if limit is None else fh.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise FileTooLarge(path, limit)
    return data


__all__ = [
    "AGENT_READ_LIMIT",
    "OUTPUT_LIMIT",
    "STATE_OUTPUT_LIMIT",
    "Capture",
    "FileTooLarge",
    "read_at_most",
]
