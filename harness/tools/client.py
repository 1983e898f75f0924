"""The harness side of the tool-server protocol (``harness.tools.server``): start the
environment's server once per trial in the sandbox, send it tool calls and snapshot requests.

A sandbox backend that can keep a process running with its stdin and stdout attached
overrides ``Sandbox.open_process(cmd, *, stderr)`` (local, bwrap and Docker do; the faulty
backend forwards it); the base class answers None, and then the
environment's per-call tool commands are used instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream

from harness import text
from harness.config.models import ToolServerSpec
from harness.errors import AgentFailure, SandboxError
from harness.sandbox.output import OUTPUT_LIMIT, STATE_OUTPUT_LIMIT, Capture
from harness.tools.server import ToolReply, ToolRequest

CALL_LINE_LIMIT = 4 * OUTPUT_LIMIT
"""Bytes of one call's reply line held at most (its output, JSON-escaped); a longer reply
is read to its end, dropped and answered as an error."""


class ToolServerDied(AgentFailure):
    """The tool server stopped answering during the agent's turn: the agent's input is
    the only thing that reaches it, so this is the agent's failure, never retried."""


class LineTooLong(Exception):
    """A reply line was longer than the limit it was read with (it was read and dropped)."""

    def __init__(self, size: int):
        super().__init__(f"a reply of {size} bytes")
        self.size = size


class _Lines:
    """Protocol lines from the server's stdout, each held only up to a limit."""

    def __init__(self, stream: ByteReceiveStream):
        self._stream = stream
        self._buf = bytearray()

    async def receive(self, limit: int) -> bytes:
        """The next line (without its newline); ``LineTooLong`` after dropping a longer
        one; ``anyio.EndOfStream`` when the server's stdout closed first."""
        dropped, scanned = 0, 0
        while True:
            end = self._buf.find(b"\n", scanned)
            if end >= 0:
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                if dropped:
                    raise LineTooLong(dropped + len(line))
                return line
            if len(self._buf) > limit:
                dropped += len(self._buf)
                self._buf.clear()
            scanned = len(self._buf)
            self._buf += await self._stream.receive()


class _StderrTail:
    """The server's stderr (where tools print), drained by a thread as it comes: only its
    first and last bytes are held, never a file that an agent's tool could fill."""

    def __init__(self) -> None:
        self._read, self.fd = os.pipe()
        self._capture = Capture(64 * 1024)
        self._thread = threading.Thread(target=self._drain, name="tool-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._read, 65536):
                self._capture.add(chunk)
        finally:
            os.close(self._read)

    def started(self) -> None:
        """The process holds the write end now: close ours, so EOF comes when it exits."""
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def tail(self, n: int) -> str:
        return text.decode(self._capture.value())[-n:].strip()


class ToolServer:
    """One running tool server. Requests are answered in order, one at a time."""

    def __init__(self, process: Any, stderr: _StderrTail):
        self._proc = process
        self._stderr = stderr
        self._out = _Lines(process.stdout)
        self._lock = anyio.Lock()
        self._next = 0
        self.dead: str | None = None
        self.tools: list[str] = []

    @classmethod
    async def start(cls, sandbox: Any, spec: ToolServerSpec) -> ToolServer | None:
        """Start the server and wait for its ready line; None when the backend cannot keep
        a process attached. A server that does not come up is a broken environment."""
        stderr = _StderrTail()
        try:
            process = await sandbox.open_process(spec.command, stderr=stderr.fd)
        finally:
            stderr.started()
        if process is None:
            return None
        server = cls(process, stderr)
        try:
            with anyio.fail_after(spec.startup_timeout_s):
                hello = json.loads(await server._out.receive(OUTPUT_LIMIT))
        except (TimeoutError, anyio.EndOfStream, LineTooLong, ValueError) as exc:
            await server.close()
            raise SandboxError(
                f"tool server {spec.command!r} did not start ({type(exc).__name__}): "
                f"{server.stderr_tail()}"
            ) from None
        if not isinstance(hello, dict) or hello.get("ready") is not True:
            await server.close()
            raise SandboxError(f"tool server {spec.command!r} sent {str(hello)[:200]!r}, not ready")
        server.tools = list(hello.get("tools", []))
        return server

    def stderr_tail(self, n: int = 500) -> str:
        return self._stderr.tail(n)

    async def _request(
        self, request: ToolRequest, timeout: float | None, limit: int = CALL_LINE_LIMIT
    ) -> ToolReply:
        """Send one request and read its reply line (``LineTooLong`` past ``limit``)."""
        async with self._lock:
            if self.dead:
                raise ToolServerDied("tool_server_died", self.dead)
            self._next += 1
            body: ToolRequest = {"id": self._next, **request}
            try:
                with anyio.fail_after(timeout):
                    await self._proc.stdin.send((json.dumps(body) + "\n").encode())
                    line = await self._out.receive(limit)
            except TimeoutError:
                self.dead = f"no answer to {body['op']} within {timeout}s"
                await self._kill()
                raise
            except (anyio.EndOfStream, anyio.BrokenResourceError) as exc:
                self.dead = f"the tool server exited ({type(exc).__name__}): {self.stderr_tail()}"
                raise ToolServerDied("tool_server_died", self.dead) from None
            try:
                reply: ToolReply = json.loads(line)
            except (ValueError, RecursionError):
                reply = {"id": None}
            if not isinstance(reply, dict) or reply.get("id") != body["id"]:
                self.dead = f"answer out of order: {str(reply)[:200]}"
                raise ToolServerDied("tool_server_died", self.dead)
            return reply

    async def call(self, tool: str, args: dict[str, object], timeout: float) -> tuple[bool, str]:
        """(ok, output) of one tool call; a timeout or a dead server gives an error output."""
        try:
            reply = await self._request({"op": "call", "tool": tool, "args": args}, timeout)
        except TimeoutError:
            return False, f"error: tool '{tool}' timed out after {timeout}s"
        except LineTooLong as exc:
            return False, (
                f"error: tool '{tool}' answered with {exc.size} bytes, more than the "
                f"{CALL_LINE_LIMIT} a reply may hold; its output was not kept"
            )
        except ToolServerDied as exc:
            return False, f"error: {exc}"
        return bool(reply.get("ok")), text.printable(str(reply.get("output", "")))

    async def snapshot(self, timeout: float = 120.0) -> Any:
        """The state the server holds. Raises ``ToolServerDied`` when it is gone."""
        try:
            reply = await self._request({"op": "snapshot"}, timeout, STATE_OUTPUT_LIMIT)
        except TimeoutError:
            raise ToolServerDied("tool_server_died", self.dead or "snapshot timed out") from None
        except LineTooLong as exc:
            raise ToolServerDied(
                "tool_server_died",
                f"the state snapshot is {exc.size} bytes, over the cap of {STATE_OUTPUT_LIMIT}",
            ) from None
        return reply.get("state")

    async def _kill(self) -> None:
        if self._proc.returncode is None:
            self._proc.kill()

    async def close(self) -> None:
        """Close stdin (the server exits), then make sure it is gone."""
        with anyio.CancelScope(shield=True):
            try:
                await self._proc.stdin.aclose()
                with anyio.move_on_after(5):
                    await self._proc.wait()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            if self._proc.returncode is None:
                await self._kill()
                await self._proc.wait()
