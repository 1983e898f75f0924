"""The files a ``command`` agent's program shares with the harness: its answer, its
trajectory lines and the task's tool list, on the host or inside the sandbox."""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from harness import text
from harness.agents.base import AgentContext
from harness.errors import AgentFailure
from harness.sandbox.output import OUTPUT_LIMIT, FileTooLarge, read_at_most

LIMITS = {"answer": OUTPUT_LIMIT, "trajectory": 16 * OUTPUT_LIMIT, "tools": OUTPUT_LIMIT}
"""Bytes the harness reads of each exchange file at most."""


class ExchangeFiles:
    """The answer, trajectory and tools files the program shares with the harness.

    For ``where: host`` they live in a host temporary directory, outside the sandbox. For
    ``where: sandbox`` they live in a hidden, randomly named folder inside the workdir
    (the program can reach no other shared place), removed before the final state snapshot.
    """

    NAMES = {"answer": "answer.txt", "trajectory": "trajectory.jsonl", "tools": "tools.json"}

    def __init__(self, ctx: AgentContext, where: str, base: str, host_cwd: str | None):
        self.ctx, self.where, self.base, self.host_cwd = ctx, where, base, host_cwd

    def path(self, name: str) -> str:
        return f"{self.base}/{self.NAMES[name]}"

    async def read(self, name: str) -> str | None:
        """The file's text, or None when the program did not write it. A file over its cap
        (``LIMITS``) is the program's failure: the harness never holds more of it."""
        limit = LIMITS[name]
        try:
            if self.where == "host":
                data = await anyio.to_thread.run_sync(read_at_most, self.path(name), limit)
            else:
                data = await self.ctx.sandbox.read_file(self.path(name), limit)
        except FileTooLarge:
            raise AgentFailure(
                "too_much_output", f"the program's {self.NAMES[name]} holds more than {limit} bytes"
            ) from None
        except Exception:  # OSError, or a sandbox backend's own "missing file" error
            return None
        return text.decode(data)


@asynccontextmanager
async def exchange_files(ctx: AgentContext, where: str) -> AsyncIterator[ExchangeFiles]:
    """Create the exchange files (the tools list written), remove them afterwards."""
    tools = json.dumps([t.model_dump() for t in ctx.tools], indent=1).encode()
    if where == "host":
        base = tempfile.mkdtemp(prefix="harness-agent-")
        local = _local_root(ctx)
        cwd = local or tempfile.mkdtemp(prefix="harness-agent-cwd-")
        files = ExchangeFiles(ctx, where, base, cwd)
        Path(files.path("tools")).write_bytes(tools)
        try:
            yield files
        finally:
            shutil.rmtree(base, ignore_errors=True)
            if local is None:
                shutil.rmtree(cwd, ignore_errors=True)
    else:
        # inside the workdir (relative): removed again before the final state snapshot
        base = f".harness-agent-{uuid.uuid4().hex[:12]}"
        files = ExchangeFiles(ctx, where, base, None)
        await ctx.sandbox.write_file(files.path("tools"), tools)
        try:
            yield files
        finally:
            with anyio.CancelScope(shield=True):
                await ctx.sandbox.exec(f"rm -rf {shlex.quote(base)}", timeout=30)


def _local_root(ctx: AgentContext) -> str | None:
    from harness.sandbox.local import LocalSandbox

    return str(ctx.sandbox.root) if isinstance(ctx.sandbox, LocalSandbox) else None


__all__ = ["ExchangeFiles", "exchange_files"]
