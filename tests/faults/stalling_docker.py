"""A Docker daemon that stops answering for one container: a unix-socket proxy in front of
the real daemon that forwards everything, until an exec whose command holds ``marker``
starts; from then on every request about that container (its id, its execs) is swallowed
and never answered, as a daemon deadlocked on one container behaves (Docker 20.10, a pause
landing as an exec starts). The container itself keeps running; the test removes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from pathlib import Path

REQUEST = re.compile(rb"(?:GET|POST|PUT|DELETE|HEAD) (/\S*) HTTP/1\.[01]")
EXEC_CREATE = re.compile(r"/containers/([0-9a-f]{12,64})/exec$")
EXEC_START = re.compile(r"/exec/([0-9a-f]{64})/start")
EXEC_ID = re.compile(rb'"Id"\s*:\s*"([0-9a-f]{64})"')


class StallingDocker:
    """``with StallingDocker(path, marker) as proxy``: ``proxy.url`` is a DOCKER_HOST."""

    def __init__(self, socket_path: Path, marker: str, upstream: str = "/var/run/docker.sock"):
        self.path, self.marker, self.upstream = socket_path, marker.encode(), upstream
        self.target: str | None = None
        """The container the daemon stopped answering for (set when its exec starts)."""
        self._candidates: dict[str, str] = {}  # exec id -> container, for marked execs
        self._target_execs: set[str] = set()
        self.stalled_requests = 0
        self.requests: list[str] = []
        """Every request line seen (method and path), for a failing test's message."""
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(lambda loop, context: None)  # cut-off connections
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def __enter__(self) -> StallingDocker:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        self._server = await asyncio.start_unix_server(self._client, path=str(self.path))

    def _about_target(self, path: str) -> bool:
        if self.target is None:
            return False
        return self.target[:12] in path or any(e in path for e in self._target_execs)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.upstream)
        marked: list[str] = []  # containers of marked exec creations on this connection
        stalled = asyncio.Event()

        async def down() -> None:  # daemon -> client
            while data := await up_reader.read(65536):
                if marked:
                    for exec_id in EXEC_ID.findall(data):
                        self._candidates[exec_id.decode()] = marked.pop(0)
                if stalled.is_set():
                    continue  # the answer never arrives
                writer.write(data)
                await writer.drain()
            if not stalled.is_set():  # the daemon ended its answer: so does the proxy
                writer.close()

        pump = asyncio.ensure_future(down())
        creating: str | None = None  # the container of an exec creation whose body may follow
        try:
            while data := await reader.read(65536):
                if stalled.is_set():
                    continue
                for raw in REQUEST.findall(data):
                    path = raw.decode(errors="replace").split("?", 1)[0]
                    self.requests.append(path)
                    created = EXEC_CREATE.search(path)
                    creating = created[1] if created else None
                    started = EXEC_START.search(path)
                    if started and started[1] in self._candidates and self.target is None:
                        self.target = self._candidates[started[1]]
                        self._target_execs.add(started[1])
                    if self._about_target(path):
                        self.stalled_requests += 1
                        stalled.set()
                if creating is not None and self.marker in data and self.target is None:
                    marked.append(creating)
                    creating = None
                if stalled.is_set():
                    continue
                up_writer.write(data)
                await up_writer.drain()
            if not stalled.is_set():  # the client is done sending; the answer may still come
                with contextlib.suppress(OSError):
                    up_writer.write_eof()
                await pump
        finally:
            pump.cancel()
            up_writer.close()
            writer.close()
