"""The harness side of the tool-server protocol (``harness.tools.server``): start the
environment's server once per trial in the sandbox, send it tool calls and snapshot requests.

A sandbox backend that can keep a process running with its stdin and stdout attached
declares ``open_process(cmd, *, stderr)`` (local, bwrap and Docker do). Without it, the
environment's per-call tool commands are used instead.
"""

from __future__ import annotations

import json
import tempfile
from typing import IO, Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from harness.config.models import ToolServerSpec
from harness.errors import AgentFailure, SandboxError
from harness.tools.server import ToolReply, ToolRequest

MAX_LINE = 1 << 30  # a snapshot of a large state is one line


class ToolServerDied(AgentFailure):
    """The tool server stopped answering during the agent's turn: the agent's input is
    the only thing that reaches it, so this is the agent's failure, never retried."""


class ToolServer:
    """One running tool server. Requests are answered in order, one at a time."""

    def __init__(self, process: Any, stderr: IO[bytes]):
        self._proc = process
        self._stderr = stderr
        self._out = BufferedByteReceiveStream(process.stdout)
        self._lock = anyio.Lock()
        self._next = 0
        self.dead: str | None = None
        self.tools: list[str] = []

    @classmethod
    async def start(cls, sandbox: Any, spec: ToolServerSpec) -> ToolServer | None:
        """Start the server and wait for its ready line; None when the backend cannot keep
        a process attached. A server that does not come up is a broken environment."""
        opener = getattr(sandbox, "open_process", None)
        if opener is None:
            return None
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server
        process = await opener(spec.command, stderr=stderr)
        server = cls(process, stderr)
        try:
            with anyio.fail_after(spec.startup_timeout_s):
                hello = json.loads(await server._out.receive_until(b"\n", MAX_LINE))
        except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead, ValueError) as exc:
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
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-n:].strip()

    async def _request(self, request: ToolRequest, timeout: float | None) -> ToolReply:
        async with self._lock:
            if self.dead:
                raise ToolServerDied("tool_server_died", self.dead)
            self._next += 1
            body: ToolRequest = {"id": self._next, **request}
            try:
                with anyio.fail_after(timeout):
                    await self._proc.stdin.send((json.dumps(body) + "\n").encode())
                    line = await self._out.receive_until(b"\n", MAX_LINE)
            except TimeoutError:
                self.dead = f"no answer to {body['op']} within {timeout}s"
                await self._kill()
                raise
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.IncompleteRead) as exc:
                self.dead = f"the tool server exited ({type(exc).__name__}): {self.stderr_tail()}"
                raise ToolServerDied("tool_server_died", self.dead) from None
            reply: ToolReply = json.loads(line)
            if reply.get("id") != body["id"]:
                self.dead = f"answer out of order: {str(reply)[:200]}"
                raise ToolServerDied("tool_server_died", self.dead)
            return reply

    async def call(self, tool: str, args: dict[str, object], timeout: float) -> tuple[bool, str]:
        """(ok, output) of one tool call; a timeout or a dead server gives an error output."""
        try:
            reply = await self._request({"op": "call", "tool": tool, "args": args}, timeout)
        except TimeoutError:
            return False, f"error: tool '{tool}' timed out after {timeout}s"
        except ToolServerDied as exc:
            return False, f"error: {exc}"
        return bool(reply.get("ok")), str(reply.get("output", ""))

    async def snapshot(self, timeout: float = 120.0) -> Any:
        """The state the server holds. Raises ``ToolServerDied`` when it is gone."""
        try:
            reply = await self._request({"op": "snapshot"}, timeout)
        except TimeoutError:
            raise ToolServerDied("tool_server_died", self.dead or "snapshot timed out") from None
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
            self._stderr.close()
