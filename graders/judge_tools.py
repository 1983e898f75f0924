"""A judge that explores the agent's work dir with read-only tools before it answers.

The judge's conversation offers three tools over ``graders.judge_workspace.WorkView`` (the
work dir read from its archive on the host: nothing runs, nothing is followed out of it):
``list_files(path)``, ``read_file(path, max_bytes, offset)`` and ``grep(text, path)``. Each
turn of the judge that calls tools is one step; after ``steps`` of them the judge is told to
answer and offered no more tools. Tool replies together hold at most ``budget`` bytes; past
it they say so. Every call, its arguments and the start of its reply are kept for the
verdict's evidence, with the caps that were hit.

The conversation is spoken in the judge's API: chat completions (``tools`` + ``role: tool``
messages), Responses (``function_call`` / ``function_call_output`` items) or Messages
(``tool_use`` / ``tool_result`` blocks).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from graders.judge_workspace import PathRefused, WorkView

READ_LIMIT = 20_000
"""Bytes one ``read_file`` call returns at most (whatever ``max_bytes`` the judge asks)."""
LOGGED_CHARS = 400
"""Characters of each tool reply kept in the verdict's evidence."""

_PATH = {"type": "string", "description": "a path relative to the work dir ('.' is the dir)"}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "list_files",
        "description": "List the files and directories at and below a path of the agent's "
        "work dir, with sizes; symbolic links are shown with their target, never followed.",
        "parameters": {"type": "object", "properties": {"path": _PATH}, "required": []},
    },
    {
        "name": "read_file",
        "description": f"Read a file of the agent's work dir as text: at most max_bytes "
        f"(up to {READ_LIMIT}) from byte offset.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "max_bytes": {"type": "integer", "minimum": 1, "maximum": READ_LIMIT},
                "offset": {"type": "integer", "minimum": 0},
            },
            "required": ["path"],
        },
    },
    {
        "name": "grep",
        "description": "Find the lines holding a plain string (not a pattern) in the files "
        "at and below a path of the agent's work dir.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "path": _PATH},
            "required": ["text"],
        },
    },
]
NUDGE = (
    "You have used your {steps} turns of tool calls. Answer now, with the JSON object asked "
    "for, from what you have read."
)
"""What the judge is told when its step cap is reached."""


@dataclass
class Call:
    id: str
    name: str
    args: dict[str, Any] | None
    """None: the arguments were not a JSON object (the judge is told so)."""


@dataclass
class Exploration:
    """What one judgement's conversation did: its final text, each model call's spend, the
    tool calls with the start of their replies, and the caps it hit."""

    text: str | None = None
    spent: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    bytes_read: int = 0
    steps: int = 0
    limits: list[str] = field(default_factory=list)


Send = Callable[[dict[str, Any]], Awaitable[tuple[dict[str, Any], dict[str, Any]]]]
"""Sends one request body; returns the reply's JSON and the call's spend."""


class Toolbox:
    """The judge's tools over one work dir, under a byte budget."""

    def __init__(self, work: WorkView, budget: int):
        self.work, self.left, self.budget = work, budget, budget

    def run(self, call: Call) -> str:
        if call.args is None:
            return "error: the arguments are not a JSON object"
        a = call.args
        try:
            if call.name == "list_files":
                reply = self.work.list_files(a.get("path", "."))
            elif call.name == "read_file":
                want = a.get("max_bytes")
                want = want if isinstance(want, int) and want > 0 else READ_LIMIT
                offset = a.get("offset")
                offset = offset if isinstance(offset, int) else 0
                reply = self.work.read_file(a.get("path"), min(want, READ_LIMIT, self.left), offset)
            elif call.name == "grep":
                reply = self.work.grep(a.get("text"), a.get("path", "."))
            else:
                return f"error: no tool named {call.name!r} (list_files, read_file, grep)"
        except PathRefused as exc:
            return f"error: {exc}"
        return self._cut(reply)

    def _cut(self, reply: str) -> str:
        if self.left <= 0:
            return f"[the byte budget of {self.budget} bytes is used up: answer from what you have]"
        data = reply.encode()
        if len(data) > self.left:
            data = data[: self.left]
            reply = data.decode(errors="ignore") + (
                f"\n[cut: the byte budget of {self.budget} bytes is used up]"
            )
        self.left -= len(data)
        return reply


async def explore(
    send: Send, api: str, body: dict[str, Any], work: WorkView, steps: int, budget: int
) -> Exploration:
    """The judge's conversation with tools, from the first request ``body`` to its answer."""
    dialog, box, out = DIALOGS[api](body), Toolbox(work, budget), Exploration()
    dialog.offer(TOOLS)
    for step in range(steps + 1):
        if step == steps:
            dialog.close(NUDGE.format(steps=steps))
            out.limits.append(f"step cap: {steps} turns of tool calls used, the judge was told "
                              "to answer")  # fmt: skip
        data, spent = await send(dialog.body)
        out.spent.append(spent)
        calls = dialog.calls(data)
        if not calls or step == steps:
            out.text = dialog.text(data)
            break
        out.steps += 1
        results = []
        for c in calls:
            reply = box.run(c)
            results.append(reply)
            out.log.append(
                {"step": step + 1, "tool": c.name, "args": c.args, "reply": reply[:LOGGED_CHARS]}
                | {"bytes": len(reply.encode())}
            )
        dialog.extend(data, calls, results)
    out.bytes_read = budget - box.left
    if box.left <= 0:
        out.limits.append(f"byte cap: the {budget} bytes of tool replies were used up")
    return out


# ----------------------------------------------------------------------------- APIs
class Dialog:
    """One API's way of offering tools and carrying their results (subclasses)."""

    def __init__(self, body: dict[str, Any]):
        self.body = body

    def offer(self, tools: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def calls(self, data: dict[str, Any]) -> list[Call]:
        raise NotImplementedError

    def text(self, data: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def extend(self, data: dict[str, Any], calls: list[Call], results: list[str]) -> None:
        raise NotImplementedError

    def close(self, nudge: str) -> None:
        """No more tool calls: say so, and set the API's tool choice to none."""
        raise NotImplementedError


def _args(raw: object) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


class ChatDialog(Dialog):
    def offer(self, tools: list[dict[str, Any]]) -> None:
        self.body["tools"] = [{"type": "function", "function": t} for t in tools]

    def _message(self, data: dict[str, Any]) -> dict[str, Any]:
        choices = data.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else {}
        message = first.get("message") if isinstance(first, dict) else None
        return message if isinstance(message, dict) else {}

    def calls(self, data: dict[str, Any]) -> list[Call]:
        out = []
        for c in self._message(data).get("tool_calls") or []:
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict):
                out.append(Call(str(c.get("id")), str(fn.get("name")), _args(fn.get("arguments"))))
        return out

    def text(self, data: dict[str, Any]) -> str | None:
        content = self._message(data).get("content")
        return content if isinstance(content, str) else None

    def extend(self, data: dict[str, Any], calls: list[Call], results: list[str]) -> None:
        message = self._message(data)
        said = {"role": "assistant", "content": message.get("content")}
        self.body["messages"].append(said | {"tool_calls": message.get("tool_calls")})
        for c, r in zip(calls, results, strict=True):
            self.body["messages"].append({"role": "tool", "tool_call_id": c.id, "content": r})

    def close(self, nudge: str) -> None:
        self.body["tool_choice"] = "none"
        self.body["messages"].append({"role": "user", "content": nudge})


class ResponsesDialog(Dialog):
    def offer(self, tools: list[dict[str, Any]]) -> None:
        self.body["tools"] = [{"type": "function", **t} for t in tools]
        if isinstance(self.body.get("input"), str):
            self.body["input"] = [{"role": "user", "content": self.body["input"]}]

    def _items(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        output = data.get("output")
        return [i for i in output if isinstance(i, dict)] if isinstance(output, list) else []

    def calls(self, data: dict[str, Any]) -> list[Call]:
        return [
            Call(str(i.get("call_id")), str(i.get("name")), _args(i.get("arguments")))
            for i in self._items(data)
            if i.get("type") == "function_call"
        ]

    def text(self, data: dict[str, Any]) -> str | None:
        texts = [
            p["text"]
            for i in self._items(data)
            for p in i.get("content") or []
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "".join(texts) if texts else None

    def extend(self, data: dict[str, Any], calls: list[Call], results: list[str]) -> None:
        self.body["input"].extend(self._items(data))
        for c, r in zip(calls, results, strict=True):
            self.body["input"].append({"type": "function_call_output", "call_id": c.id} | {
                "output": r})  # fmt: skip

    def close(self, nudge: str) -> None:
        self.body["tool_choice"] = "none"
        self.body["input"].append({"role": "user", "content": nudge})


class MessagesDialog(Dialog):
    def offer(self, tools: list[dict[str, Any]]) -> None:
        self.body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in tools
        ]

    def _blocks(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        content = data.get("content")
        return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []

    def calls(self, data: dict[str, Any]) -> list[Call]:
        return [
            Call(str(b.get("id")), str(b.get("name")), _args(b.get("input")))
            for b in self._blocks(data)
            if b.get("type") == "tool_use"
        ]

    def text(self, data: dict[str, Any]) -> str | None:
        texts = [b["text"] for b in self._blocks(data) if isinstance(b.get("text"), str)]
        return "".join(texts) if texts else None

    def extend(self, data: dict[str, Any], calls: list[Call], results: list[str]) -> None:
        self.body["messages"].append({"role": "assistant", "content": self._blocks(data)})
        blocks = [
            {"type": "tool_result", "tool_use_id": c.id, "content": r}
            for c, r in zip(calls, results, strict=True)
        ]
        self.body["messages"].append({"role": "user", "content": blocks})

    def close(self, nudge: str) -> None:
        self.body["tool_choice"] = {"type": "none"}
        last = self.body["messages"][-1]
        if isinstance(last.get("content"), list):  # the tool results' turn: one user turn
            last["content"].append({"type": "text", "text": nudge})
        else:
            self.body["messages"].append({"role": "user", "content": nudge})


DIALOGS: dict[str, type[Dialog]] = {
    "chat": ChatDialog,
    "responses": ResponsesDialog,
    "messages": MessagesDialog,
}
