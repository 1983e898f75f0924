"""The JSON shapes of the three model APIs the harness speaks, declared once.

OpenAI chat completions, OpenAI Responses and Anthropic Messages: the parts of requests,
responses, usage blocks, stream events and error bodies that the client, the metering proxy
and the ``llm`` agent read or write. TypedDicts cost nothing at run time (no validation per
streamed event); they let mypy check every field name at both ends.

Bodies come from an upstream or a program the harness does not trust: the shapes say what
the API documents, and readers still check a value's type (``isinstance``) before using it.
Keys the harness never reads are left out (they are relayed as sent).
"""

from __future__ import annotations

from typing import Literal, Required, TypedDict

from harness.jsontypes import JSONObject
from harness.models.chat import ChatMessage, ToolSchema

# ------------------------------------------------------------------------------ errors


class OpenAIError(TypedDict, total=False):
    """The error object of both OpenAI APIs (also the proxy's own errors)."""

    message: Required[str]
    type: str
    code: str | None
    param: str | None


class OpenAIErrorBody(TypedDict):
    error: OpenAIError


class AnthropicError(TypedDict):
    type: str
    message: str


class AnthropicErrorBody(TypedDict):
    type: Literal["error"]
    error: AnthropicError


ErrorBody = OpenAIErrorBody | AnthropicErrorBody
"""An error answer in the shape of the API that was called (so the SDKs raise it)."""


# ------------------------------------------------------------------------------ chat


class StreamOptions(TypedDict, total=False):
    include_usage: bool


class ChatRequest(TypedDict, total=False):
    """The request ``ChatClient.chat`` builds (settings' extra keys are added as given)."""

    model: Required[str]
    messages: Required[list[ChatMessage]]
    temperature: float
    max_tokens: int
    tools: list[ToolSchema]
    seed: int
    stream: bool
    stream_options: StreamOptions


class PromptTokensDetails(TypedDict, total=False):
    cached_tokens: int


class ChatUsage(TypedDict, total=False):
    prompt_tokens: int
    """All prompt tokens, cached ones included."""
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails | None


class ChatChoice(TypedDict, total=False):
    index: int
    message: ChatMessage
    finish_reason: str | None


class ChatCompletion(TypedDict, total=False):
    """A whole chat completion."""

    id: str
    model: str
    choices: list[ChatChoice]
    usage: ChatUsage | None


class ChatDeltaFunction(TypedDict, total=False):
    name: str
    arguments: str
    """A piece of the arguments' JSON text."""


class ChatDeltaToolCall(TypedDict, total=False):
    index: int
    id: str
    type: str
    function: ChatDeltaFunction


class ChatDelta(TypedDict, total=False):
    role: str
    content: str | None
    tool_calls: list[ChatDeltaToolCall]


class ChatChunkChoice(TypedDict, total=False):
    index: int
    delta: ChatDelta
    finish_reason: str | None


class ChatCompletionChunk(TypedDict, total=False):
    """One streamed chunk. With ``include_usage`` the last chunk has usage and no choices;
    an upstream may also end a stream with an ``error`` chunk."""

    id: str
    model: str
    choices: list[ChatChunkChoice]
    usage: ChatUsage | None
    error: OpenAIError


# ------------------------------------------------------------------------------ responses


class InputTokensDetails(TypedDict, total=False):
    cached_tokens: int


class ResponsesUsage(TypedDict, total=False):
    input_tokens: int
    """All input tokens, cached ones included."""
    output_tokens: int
    total_tokens: int
    input_tokens_details: InputTokensDetails | None


class ResponsesContentPart(TypedDict, total=False):
    type: str
    """``output_text`` or ``refusal``."""
    text: str


class ResponsesOutputItem(TypedDict, total=False):
    type: str
    """``message``, ``function_call``, ``reasoning``, …"""
    id: str
    name: str
    """For a ``function_call``: the function's name."""
    arguments: str
    content: list[ResponsesContentPart]


class ResponsesBody(TypedDict, total=False):
    """A whole Responses answer (also the ``response`` of its terminal stream events)."""

    id: str
    model: str
    status: str
    output: list[ResponsesOutputItem]
    usage: ResponsesUsage | None
    error: OpenAIError | None


class ResponsesEvent(TypedDict, total=False):
    """One streamed Responses event; ``type`` says which of the other keys it carries."""

    type: str
    delta: str
    """``response.output_text.delta``: the next piece of text."""
    item: ResponsesOutputItem
    """``response.output_item.added``."""
    response: ResponsesBody
    """``response.completed``, ``response.incomplete``, ``response.failed``."""
    error: OpenAIError
    """Not in OpenAI's ``error`` event (its fields are at the top); the proxy's own error
    events carry it too, for clients that read the chat API's shape."""
    code: str | None
    message: str
    param: str | None


# ------------------------------------------------------------------------------ messages


class AnthropicUsage(TypedDict, total=False):
    input_tokens: int
    """Uncached input tokens only (cache writes and reads are counted apart)."""
    output_tokens: int
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None


class AnthropicContentBlock(TypedDict, total=False):
    type: str
    """``text``, ``tool_use``, ``thinking``, …"""
    text: str
    id: str
    name: str
    """For a ``tool_use`` block: the tool's name."""
    input: JSONObject


class AnthropicMessage(TypedDict, total=False):
    """A whole Messages answer (also the ``message`` of ``message_start``)."""

    id: str
    type: str
    role: str
    model: str
    content: list[AnthropicContentBlock]
    stop_reason: str | None
    usage: AnthropicUsage


class AnthropicDelta(TypedDict, total=False):
    type: str
    """``text_delta``, ``input_json_delta``, … (or none, in ``message_delta``)."""
    text: str
    partial_json: str
    stop_reason: str | None


class AnthropicEvent(TypedDict, total=False):
    """One streamed Messages event; ``type`` says which of the other keys it carries."""

    type: str
    index: int
    message: AnthropicMessage
    """``message_start``: the input side of the usage."""
    content_block: AnthropicContentBlock
    delta: AnthropicDelta
    usage: AnthropicUsage
    """``message_delta``: cumulative counts (output always)."""
    error: AnthropicError


__all__ = [
    "AnthropicContentBlock",
    "AnthropicDelta",
    "AnthropicError",
    "AnthropicErrorBody",
    "AnthropicEvent",
    "AnthropicMessage",
    "AnthropicUsage",
    "ChatChoice",
    "ChatChunkChoice",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatDelta",
    "ChatDeltaToolCall",
    "ChatRequest",
    "ChatUsage",
    "ErrorBody",
    "OpenAIError",
    "OpenAIErrorBody",
    "ResponsesBody",
    "ResponsesEvent",
    "ResponsesOutputItem",
    "ResponsesUsage",
    "StreamOptions",
]
