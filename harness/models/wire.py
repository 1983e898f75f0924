"""The model APIs the metering proxy serves, one small adapter each.

An adapter knows where its API lives (``path``), which upstream kind serves it
(``provider``), how to read the usage out of a whole response or out of a stream, how to
make a stream report usage when the API lets a request ask for it, and how to word an error
(as a body or as a stream event) so the official SDKs raise it.

A stream's usage is whatever its events said last: servers report it in different shapes,
and each event that carries usage replaces (or, for Anthropic's split counts, completes) the
figure so far. The proxy meters the call once, on the final figure, when the stream ends.

- ``chat``: OpenAI chat completions. OpenAI reports usage only in a last, usage-only chunk,
  and only when the request sets ``stream_options.include_usage`` (the proxy sets it and
  drops that chunk again when the program had not asked for it). vLLM and SGLang may put
  cumulative usage on every chunk (``continuous_usage_stats``): the last one counts.
- ``responses``: OpenAI Responses. ``response.completed`` carries the usage.
- ``messages``: Anthropic Messages. ``message_start`` carries the input side (uncached, cache
  writes, cache reads) and a first output count, ``message_delta`` the cumulative output
  tokens (and, from some servers, the input side again).

A stream without any usage is metered on a stated estimate and marked as such (the proxy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, cast

from harness.jsontypes import JSONObject, JSONValue
from harness.models.api_types import (
    AnthropicErrorBody,
    AnthropicEvent,
    AnthropicMessage,
    AnthropicUsage,
    ChatCompletion,
    ChatCompletionChunk,
    ErrorBody,
    OpenAIErrorBody,
    ResponsesBody,
    ResponsesEvent,
)
from harness.models.client import ModelUsage
from harness.models.responder import proxy_error
from harness.models.sse import SSEEvent, encode_event


@dataclass
class StreamState:
    """What the proxy learnt from one stream so far."""

    usage: ModelUsage | None = None
    done: bool = False
    """The API's terminal event arrived (the stream was complete)."""
    upstream_error: str | None = None
    """The upstream itself ended the stream with an error event."""
    text: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    events: int = 0


class WireAPI:
    """One served API. Subclasses fill in the class attributes and the hooks.

    Bodies arrive as relayed JSON objects (``JSONObject``); each adapter reads them through
    its API's declared shapes (``harness.models.api_types``).
    """

    name: ClassVar[str]
    path: ClassVar[str]
    """Path below the base URL, e.g. ``chat/completions``."""
    provider: ClassVar[str]
    """``openai`` or ``anthropic``: the kind of upstream that serves this API."""

    def prepare(self, payload: JSONObject) -> bool:
        """Adjust a streaming request so usage is reported; True when the program itself
        asked for the usage events (they are then passed on)."""
        return True

    def usage(self, body: JSONObject) -> ModelUsage:
        raise NotImplementedError

    def valid(self, body: JSONObject) -> bool:
        """The body has the API's shape at its top (checked before the adapter reads it)."""
        raise NotImplementedError

    def summary(self, body: JSONObject) -> tuple[str | None, list[str]]:
        """The text and the tool names of a whole (valid) response, for the trajectory."""
        raise NotImplementedError

    def observe(self, state: StreamState, event: SSEEvent, data: JSONValue, wanted: bool) -> str:
        """Update ``state`` from one event (its usage replaces or completes the figure so
        far). Returns ``forward``, or ``drop`` for an event the program did not ask for."""
        raise NotImplementedError

    def error_body(self, message: str, type_: str) -> ErrorBody:
        body: OpenAIErrorBody = {"error": proxy_error(message, type_)}
        return body

    def error_event(self, message: str, type_: str) -> bytes:
        raise NotImplementedError


class ChatAPI(WireAPI):
    name = "chat"
    path = "chat/completions"
    provider = "openai"

    def prepare(self, payload: JSONObject) -> bool:
        opts = payload.get("stream_options")
        opts = dict(opts) if isinstance(opts, dict) else {}
        wanted = bool(opts.get("include_usage"))
        opts["include_usage"] = True
        payload["stream_options"] = opts
        return wanted

    def usage(self, body: JSONObject) -> ModelUsage:
        return ModelUsage.from_response(cast(ChatCompletion, body))

    def valid(self, body: JSONObject) -> bool:
        choices = body.get("choices")
        return (
            isinstance(choices, list)
            and bool(choices)
            and isinstance(choices[0], dict)
            and isinstance(choices[0].get("message"), dict)
        )

    def summary(self, body: JSONObject) -> tuple[str | None, list[str]]:
        message = cast(ChatCompletion, body)["choices"][0]["message"]  # valid(): a dict
        names: list[str] = []
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                fn = call.get("function")
                names.append(str(fn.get("name") if isinstance(fn, dict) else None))
        content = message.get("content")
        return (content if isinstance(content, str) else None), names

    def observe(self, state: StreamState, event: SSEEvent, data: JSONValue, wanted: bool) -> str:
        if event.data.strip() == "[DONE]":
            state.done = True
            return "forward"
        if not isinstance(data, dict):
            return "forward"
        chunk = cast(ChatCompletionChunk, data)
        if chunk.get("error"):
            state.upstream_error = _message(chunk["error"])
            return "forward"
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            content = delta.get("content")
            if isinstance(content, str):
                state.text.append(content)
            for call in delta.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                name = fn.get("name") if isinstance(fn, dict) else None
                if isinstance(name, str) and name:
                    state.tools.append(name)
        if isinstance(chunk.get("usage"), dict):
            state.usage = ModelUsage.from_response(chunk)  # cumulative: the latest counts
            if not chunk.get("choices") and not wanted:
                return "drop"
        return "forward"

    def error_event(self, message: str, type_: str) -> bytes:
        return encode_event(None, self.error_body(message, type_))


class ResponsesAPI(WireAPI):
    name = "responses"
    path = "responses"
    provider = "openai"

    def usage(self, body: JSONObject) -> ModelUsage:
        return _responses_usage(cast(ResponsesBody, body))

    def valid(self, body: JSONObject) -> bool:
        return isinstance(body.get("output"), list)

    def summary(self, body: JSONObject) -> tuple[str | None, list[str]]:
        texts: list[str] = []
        names: list[str] = []
        for item in cast(ResponsesBody, body).get("output") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                names.append(str(item.get("name")))
            for part in item.get("content") or []:
                if isinstance(part, dict):
                    text = part.get("text")
                    if isinstance(text, str):
                        texts.append(text)
        return ("".join(texts) if texts else None), names

    def observe(self, state: StreamState, event: SSEEvent, data: JSONValue, wanted: bool) -> str:
        if not isinstance(data, dict):
            return "forward"
        ev = cast(ResponsesEvent, data)
        kind = ev.get("type") or event.event
        delta = ev.get("delta")
        if kind == "response.output_text.delta" and isinstance(delta, str):
            state.text.append(delta)
        elif kind == "response.output_item.added":
            item = ev.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                state.tools.append(str(item.get("name")))
        elif kind == "error":
            state.upstream_error = _message(ev.get("error") or data)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            state.done = True
            response = ev.get("response")
            response = response if isinstance(response, dict) else None
            usage = _responses_usage(response or {})
            if usage.reported or state.usage is None:
                state.usage = usage
            if kind == "response.failed":
                state.upstream_error = _message((response or {}).get("error") or kind)
        elif kind in ("response.created", "response.in_progress"):
            started = ev.get("response")
            so_far = _responses_usage(started) if isinstance(started, dict) else None
            if so_far is not None and so_far.reported:
                state.usage = so_far
        return "forward"

    def error_event(self, message: str, type_: str) -> bytes:
        event: ResponsesEvent = {
            "type": "error",
            "code": type_,
            "message": message,
            "param": None,
            "error": proxy_error(message, type_),
        }
        return encode_event("error", event)


class MessagesAPI(WireAPI):
    name = "messages"
    path = "messages"
    provider = "anthropic"

    def usage(self, body: JSONObject) -> ModelUsage:
        usage = cast(AnthropicMessage, body).get("usage")
        if not isinstance(usage, dict):
            return ModelUsage(reported=False)
        return _anthropic_usage(usage)

    def valid(self, body: JSONObject) -> bool:
        return isinstance(body.get("content"), list)

    def summary(self, body: JSONObject) -> tuple[str | None, list[str]]:
        texts: list[str] = []
        names: list[str] = []
        for block in cast(AnthropicMessage, body).get("content") or []:
            if not isinstance(block, dict):
                continue
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str):
                texts.append(text)
            elif block.get("type") == "tool_use":
                names.append(str(block.get("name")))
        return ("".join(texts) if texts else None), names

    def observe(self, state: StreamState, event: SSEEvent, data: JSONValue, wanted: bool) -> str:
        if not isinstance(data, dict):
            return "forward"
        ev = cast(AnthropicEvent, data)
        kind = ev.get("type") or event.event
        if kind == "message_start":
            message = ev.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if isinstance(usage, dict):
                state.usage = _anthropic_usage(usage)
        elif kind == "content_block_start":
            block = ev.get("content_block")
            if isinstance(block, dict) and block.get("type") == "tool_use":
                state.tools.append(str(block.get("name")))
        elif kind == "content_block_delta":
            delta = ev.get("delta")
            text = delta.get("text") if isinstance(delta, dict) else None
            if isinstance(text, str):
                state.text.append(text)
        elif kind == "message_delta":
            usage = ev.get("usage")
            if isinstance(usage, dict):
                # cumulative counts: output always, the input side when the API repeats it
                before = state.usage or ModelUsage()
                state.usage = _anthropic_usage(usage, before)
        elif kind == "message_stop":
            state.done = True
        elif kind == "error":
            state.upstream_error = _message(ev.get("error") or data)
        return "forward"

    def error_body(self, message: str, type_: str) -> ErrorBody:
        body: AnthropicErrorBody = {"type": "error", "error": {"type": type_, "message": message}}
        return body

    def error_event(self, message: str, type_: str) -> bytes:
        return encode_event("error", self.error_body(message, type_))


def _responses_usage(body: ResponsesBody) -> ModelUsage:
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return ModelUsage(reported=False)
    details = usage.get("input_tokens_details")
    return ModelUsage(
        input_tokens=_int(usage.get("input_tokens")),
        cached_tokens=_int(details.get("cached_tokens") if isinstance(details, dict) else 0),
        output_tokens=_int(usage.get("output_tokens")),
    )


_AnthropicCount = Literal[
    "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
]


def _anthropic_usage(usage: AnthropicUsage, before: ModelUsage | None = None) -> ModelUsage:
    """Anthropic counts uncached input, cache writes and cache reads apart; the harness's
    ``input_tokens`` is their sum (cached ones included, as in OpenAI's usage)."""
    b = before or ModelUsage(reported=False)
    uncached_before = b.input_tokens - b.cached_tokens - b.cache_write_tokens

    def pick(key: _AnthropicCount, old: int) -> int:
        value = usage.get(key)
        return _int(value) if isinstance(value, int) else old

    uncached = pick("input_tokens", uncached_before)
    write = pick("cache_creation_input_tokens", b.cache_write_tokens)
    read = pick("cache_read_input_tokens", b.cached_tokens)
    return ModelUsage(
        input_tokens=uncached + write + read,
        cached_tokens=read,
        cache_write_tokens=write,
        output_tokens=pick("output_tokens", b.output_tokens),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _message(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)[:500]
    return str(error)[:500]


APIS: dict[str, WireAPI] = {api.name: api for api in (ChatAPI(), ResponsesAPI(), MessagesAPI())}
"""Every served API by name."""

PROVIDER_APIS: dict[str, tuple[str, ...]] = {
    "openai": ("chat", "responses"),
    "anthropic": ("messages",),
}
"""Which APIs each kind of upstream (``ModelSettings.api``) serves."""


def api_for_path(path: str) -> WireAPI | None:
    """The API a request path names (``/v1/chat/completions`` → chat), or None."""
    path = path.split("?", 1)[0].rstrip("/")
    for api in APIS.values():
        if path.endswith("/" + api.path):
            return api
    return None


__all__ = [
    "APIS",
    "PROVIDER_APIS",
    "ChatAPI",
    "MessagesAPI",
    "ResponsesAPI",
    "StreamState",
    "WireAPI",
    "api_for_path",
]
