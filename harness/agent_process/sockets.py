"""An anyio byte stream over a connected unix socket, for the harness's end of an agent
process's channel and stderr.

anyio's own ``UNIXSocketStream`` on asyncio waits through a future its reader callback
may complete twice, or after a cancelled receive, under load (``InvalidStateError`` in
an event-loop callback; anyio issue #1267 is one face of it). This stream waits with
``anyio.wait_readable`` / ``wait_writable``, which guard against that, and then reads
or writes the non-blocking socket itself.
"""

from __future__ import annotations

import socket

import anyio
from anyio.abc import ByteStream


class SocketStream(ByteStream):
    """``sock`` (which this stream owns) as an anyio ``ByteStream``."""

    def __init__(self, sock: socket.socket):
        sock.setblocking(False)
        self._sock = sock
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                data = self._sock.recv(max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                sent = self._sock.send(view)
            except BlockingIOError:
                await anyio.wait_writable(self._sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[sent:]

    async def send_eof(self) -> None:
        self._sock.shutdown(socket.SHUT_WR)

    async def aclose(self) -> None:
        self._closed = True
        self._sock.close()


__all__ = ["SocketStream"]
