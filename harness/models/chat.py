"""The shapes of the OpenAI-style chat API that agents build and the client sends.

Typed so an agent's history is checked where it is written: a misspelt key (``tool_call``
for ``tool_calls``) is a type error, not a message the provider silently ignores.
"""

from __future__ import annotations

from typing import Literal, Required, TypedDict


class FunctionCall(TypedDict):
    name: str
    arguments: str
    """The call's arguments as the model wrote them: JSON text, possibly malformed."""


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


class ChatMessage(TypedDict, total=False):
    """One message of a chat history. Providers may add keys of their own (kept as sent)."""

    role: Required[str]
    """'system', 'user', 'assistant' or 'tool'."""
    content: str | None
    tool_calls: list[ToolCall]
    tool_call_id: str
    """For a 'tool' message: the call it answers."""
    name: str


class FunctionSchema(TypedDict):
    name: str
    description: str
    parameters: dict[str, object]
    """JSON Schema of the arguments (free-form by definition)."""


class ToolSchema(TypedDict):
    """An environment tool offered to the model as a function."""

    type: Literal["function"]
    function: FunctionSchema
