"""One scripted model turn, rendered in the wire format of each API the proxy serves.

A ``Turn`` is what the model "says" (text, tool calls) and what it "costs" (usage). The fake
server renders it for the API the request came in on (OpenAI chat completions, OpenAI
Responses, Anthropic Messages), as one JSON body or as server-sent events, so one script
drives every client. The shapes follow the public API references; each event carries the
fields the official SDKs and CLIs read.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


@dataclass
class Turn:
    """One model reply. ``usage`` is (input, output) tokens or None (the API reports none).

    ``input`` counts every prompt token, cached ones included (the OpenAI convention);
    ``cached`` of them are cache reads and ``cache_write`` cache writes (Anthropic only).
    """

    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: tuple[int, int] | None = (100, 10)
    cached: int = 0
    cache_write: int = 0
    model: str = "fake-model"
    chunk_chars: int = 4
    """Text and argument deltas are cut into pieces of this many characters."""
    stream_usage: str = "final"
    """How a stream reports usage, as servers really do: ``final`` (OpenAI: one usage-only
    chunk at the end when the request sets ``stream_options.include_usage``; Anthropic:
    ``message_start`` + ``message_delta``), ``every`` (vLLM and SGLang with continuous usage
    stats: cumulative usage on every chunk, the output count growing chunk by chunk, plus the
    final chunk when asked) or ``none`` (the server reports no usage at all)."""

    def pieces(self, text: str) -> list[str]:
        n = max(1, self.chunk_chars)
        return [text[i : i + n] for i in range(0, len(text), n)] or [""]


# ------------------------------------------------------------------------------ chat
def chat_body(turn: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": _id("call"),
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for n, a in turn.tool_calls
        ]
    body: dict[str, Any] = {
        "id": _id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": turn.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.tool_calls else "stop",
            }
        ],
    }
    if turn.usage is not None:
        body["usage"] = _chat_usage(turn)
    return body


def _chat_usage(turn: Turn, output: int | None = None) -> dict[str, Any]:
    assert turn.usage is not None
    i, o = turn.usage
    o = o if output is None else output
    return {
        "prompt_tokens": i,
        "completion_tokens": o,
        "total_tokens": i + o,
        "prompt_tokens_details": {"cached_tokens": turn.cached},
    }


def chat_events(turn: Turn, include_usage: bool) -> list[bytes]:
    cid, created = _id("chatcmpl"), int(time.time())
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    for piece in turn.pieces(turn.text) if turn.text else []:
        deltas.append({"content": piece})
    for index, (name, args) in enumerate(turn.tool_calls):
        head = {"index": index, "id": _id("call"), "type": "function"}
        deltas.append({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        for piece in turn.pieces(json.dumps(args)):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    every = turn.stream_usage == "every" and turn.usage is not None

    def chunk(n: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
        data: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if every and turn.usage is not None:  # cumulative: the output so far
            done = round(turn.usage[1] * n / (len(deltas) + 1))
            data["usage"] = _chat_usage(turn, done)
        return sse(None, data)

    out = [chunk(i + 1, d) for i, d in enumerate(deltas)]
    out.append(chunk(len(deltas) + 1, {}, "tool_calls" if turn.tool_calls else "stop"))
    if include_usage and turn.usage is not None and turn.stream_usage != "none":
        final = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "choices": [],
            "usage": _chat_usage(turn),
        }
        out.append(sse(None, final))
    out.append(b"data: [DONE]\n\n")
    return out


# ------------------------------------------------------------------------------ responses
def responses_body(turn: Turn, status: str = "completed") -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if turn.text is not None:
        output.append(_responses_message(turn.text))
    for name, args in turn.tool_calls:
        output.append(_responses_call(name, json.dumps(args)))
    body: dict[str, Any] = {
        "id": _id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": turn.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": None,
    }
    if turn.usage is not None:
        i, o = turn.usage
        body["usage"] = {
            "input_tokens": i,
            "input_tokens_details": {"cached_tokens": turn.cached},
            "output_tokens": o,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": i + o,
        }
    return body


def _responses_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": _id("msg"),
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _responses_call(name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": _id("fc"),
        "call_id": _id("call"),
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def responses_events(turn: Turn) -> list[bytes]:
    final = responses_body(turn)
    if turn.stream_usage == "none":
        final["usage"] = None
    seq = itertools.count()

    def ev(kind: str, **data: Any) -> bytes:
        return sse(kind, {"type": kind, "sequence_number": next(seq), **data})

    start = {**final, "status": "in_progress", "output": [], "usage": None}
    out = [ev("response.created", response=start), ev("response.in_progress", response=start)]
    for index, item in enumerate(final["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            head = {**item, "status": "in_progress", "content": []}
            out.append(ev("response.output_item.added", output_index=index, item=head))
            empty = {"type": "output_text", "text": "", "annotations": []}
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            out.append(ev("response.content_part.added", **ids, part=empty))
            for piece in turn.pieces(text):
                out.append(ev("response.output_text.delta", **ids, delta=piece, logprobs=[]))
            out.append(ev("response.output_text.done", **ids, text=text, logprobs=[]))
            out.append(ev("response.content_part.done", **ids, part=item["content"][0]))
        else:
            head = {**item, "status": "in_progress", "arguments": ""}
            out.append(ev("response.output_item.added", output_index=index, item=head))
            ids = {"item_id": item["id"], "output_index": index}
            for piece in turn.pieces(item["arguments"]):
                out.append(ev("response.function_call_arguments.delta", **ids, delta=piece))
            out.append(
                ev("response.function_call_arguments.done", **ids, arguments=item["arguments"])
            )
        out.append(ev("response.output_item.done", output_index=index, item=item))
    out.append(ev("response.completed", response=final))
    return out


# ------------------------------------------------------------------------------ messages
def messages_body(turn: Turn) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text is not None:
        content.append({"type": "text", "text": turn.text})
    for name, args in turn.tool_calls:
        content.append({"type": "tool_use", "id": _id("toolu"), "name": name, "input": args})
    body: dict[str, Any] = {
        "id": _id("msg"),
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": "tool_use" if turn.tool_calls else "end_turn",
        "stop_sequence": None,
    }
    if turn.usage is not None:
        body["usage"] = _messages_usage(turn)
    return body


def _messages_usage(turn: Turn) -> dict[str, Any]:
    """Anthropic counts uncached input apart from cache reads and cache writes."""
    assert turn.usage is not None
    i, o = turn.usage
    return {
        "input_tokens": i - turn.cached - turn.cache_write,
        "cache_creation_input_tokens": turn.cache_write,
        "cache_read_input_tokens": turn.cached,
        "output_tokens": o,
    }


def messages_events(turn: Turn) -> list[bytes]:
    final = messages_body(turn)
    usage = final.get("usage") or {} if turn.stream_usage != "none" else {}
    start = {**final, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    if not usage:
        start.pop("usage")
    out = [sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(final["content"]):
        if block["type"] == "text":
            head: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in turn.pieces(block["text"])]
        else:
            head = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in turn.pieces(json.dumps(block["input"]))
            ]
        out.append(
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            )
        )
        for d in deltas:
            out.append(
                sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": d},
                )
            )
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": final["stop_reason"], "stop_sequence": None},
    }
    if usage:
        delta["usage"] = {"output_tokens": usage["output_tokens"]}
    out.append(sse("message_delta", delta))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return out


# ------------------------------------------------------------------------------ framing
def sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def api_of(path: str) -> str | None:
    """Which API a request path belongs to: chat, responses, messages (or None)."""
    path = path.split("?", 1)[0].rstrip("/")
    for suffix, api in (
        ("/chat/completions", "chat"),
        ("/responses", "responses"),
        ("/messages", "messages"),
    ):
        if path.endswith(suffix):
            return api
    return None


def render(
    turn: Turn, api: str, request: dict[str, Any]
) -> tuple[dict[str, Any] | None, list[bytes] | None]:
    """(JSON body, None) for a plain request or (None, SSE events) for ``stream: true``."""
    stream = bool(request.get("stream"))
    if api == "chat":
        if not stream:
            return chat_body(turn), None
        opts = request.get("stream_options") or {}
        return None, chat_events(turn, bool(opts.get("include_usage")))
    if api == "responses":
        return (None, responses_events(turn)) if stream else (responses_body(turn), None)
    return (None, messages_events(turn)) if stream else (messages_body(turn), None)


__all__ = [
    "Turn",
    "api_of",
    "chat_body",
    "chat_events",
    "messages_body",
    "messages_events",
    "render",
    "responses_body",
    "responses_events",
    "sse",
]
