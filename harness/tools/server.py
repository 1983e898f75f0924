"""The tool-server protocol, and a stdlib-only server loop environments copy next to their tools.

Why: running one process per tool call reloads the environment's state from disk on every
call (megabytes of JSON for tau-bench) and pays a process start (and a ``docker exec``) each
time. A tool server is started once per trial in the sandbox (the environment's
``tool_server.command``, in the workdir), loads its state once, keeps it in memory, and
answers requests until its stdin closes.

Protocol (version 1): JSON lines, UTF-8, one object per line.

- The server first writes ``{"ready": true, "protocol": 1, "tools": [NAME, ...]}``.
- Request ``{"id": N, "op": "call", "tool": NAME, "args": {...}}`` is answered with
  ``{"id": N, "ok": BOOL, "output": TEXT}``; ``ok`` is false when the tool raised (the
  output then starts with ``Error:``) or does not exist.
- Request ``{"id": N, "op": "snapshot"}`` is answered with ``{"id": N, "ok": true,
  "state": {...}}``: the whole state, as the environment's state dump would print it.
- A line that is not a request is answered with ``{"id": null, "ok": false, "output":
  "Error: ..."}``. The server exits 0 when stdin closes.

Stdout carries only protocol lines: anything a tool prints goes to stderr. This file must stay
importable by a bare ``python3 -S`` (no third-party modules): importers copy it into the
environments they write.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from typing import TypedDict

PROTOCOL = 1

Tool = Callable[[dict[str, object]], str]
"""One tool: its arguments (free-form JSON, checked by the tool) -> its output text."""


class Ready(TypedDict):
    ready: bool
    protocol: int
    tools: list[str]


class ToolRequest(TypedDict, total=False):
    """A request line: ``op`` is ``call`` (with ``tool`` and ``args``) or ``snapshot``."""

    id: int
    op: str
    tool: str
    args: dict[str, object]


class ToolReply(TypedDict, total=False):
    id: int | None
    """The request's id, echoed (None for a line that was no request)."""
    ok: bool
    output: str
    """A call's output, or ``Error: ...``."""
    state: object
    """A snapshot's state, as the environment's state dump would print it."""


def handle(line: str, tools: dict[str, Tool], snapshot: Callable[[], object]) -> ToolReply:
    """One request line -> its response object. Never raises."""
    try:
        request = json.loads(line)
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
    except ValueError as exc:
        return {"id": None, "ok": False, "output": f"Error: bad request: {exc}"}
    rid, op = request.get("id"), request.get("op")
    if op == "snapshot":
        return {"id": rid, "ok": True, "state": snapshot()}
    if op != "call":
        return {"id": rid, "ok": False, "output": f"Error: unknown op {op!r}"}
    name, args = request.get("tool"), request.get("args") or {}
    if name not in tools:
        return {"id": rid, "ok": False, "output": f"Error: unknown tool {name!r}"}
    if not isinstance(args, dict):
        return {"id": rid, "ok": False, "output": "Error: args must be a JSON object"}
    try:
        with contextlib.redirect_stdout(sys.stderr):
            output = tools[name](args)
    except Exception as exc:  # the tool's own failure is the agent's information
        return {"id": rid, "ok": False, "output": f"Error: {exc}"}
    return {"id": rid, "ok": True, "output": output if isinstance(output, str) else str(output)}


def serve(tools: dict[str, Tool], snapshot: Callable[[], object]) -> None:
    """Answer requests on stdin until it closes."""
    out = sys.stdout
    ready: Ready = {"ready": True, "protocol": PROTOCOL, "tools": sorted(tools)}
    out.write(json.dumps(ready) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        out.write(json.dumps(handle(line, tools, snapshot)) + "\n")
        out.flush()
