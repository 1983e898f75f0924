"""The declared wire shapes (harness/models/api_types.py) use the field names of the
official OpenAI and Anthropic SDKs' own types, so a misspelt declaration fails here, the way a
misspelt read of a declared shape fails mypy."""

from __future__ import annotations

import typing

import pytest

from harness.models import api_types as T

openai_types = pytest.importorskip("openai.types")
anthropic_types = pytest.importorskip("anthropic.types")


def sdk_keys(*types: object) -> set[str]:
    """Every field name of the SDK types given: pydantic models, TypedDicts, and the unions
    (possibly ``Annotated``) the SDKs use for event and block kinds."""
    keys: set[str] = set()
    for tp in types:
        if typing.get_origin(tp) in (typing.Union, typing.Annotated):
            keys |= sdk_keys(*typing.get_args(tp))  # metadata (discriminators) adds none
        elif isinstance(tp, type) and hasattr(tp, "model_fields"):
            keys |= set(tp.model_fields)
        elif isinstance(tp, type) and hasattr(tp, "__required_keys__"):
            keys |= set(tp.__required_keys__) | set(tp.__optional_keys__)
    return keys


def declared(td: type) -> set[str]:
    return set(td.__required_keys__) | set(td.__optional_keys__)  # type: ignore[attr-defined]


def test_openai_chat_shapes() -> None:
    from openai.types import CompletionUsage, completion_usage
    from openai.types.chat import (
        ChatCompletion,
        ChatCompletionChunk,
        ChatCompletionStreamOptionsParam,
        chat_completion,
        chat_completion_chunk,
        completion_create_params,
    )

    pairs = [
        (T.ChatCompletion, sdk_keys(ChatCompletion)),
        (T.ChatChoice, sdk_keys(chat_completion.Choice)),
        (T.ChatUsage, sdk_keys(CompletionUsage)),
        (T.PromptTokensDetails, sdk_keys(completion_usage.PromptTokensDetails)),
        # an upstream may end a stream with an error chunk: not a type of the SDK's
        (T.ChatCompletionChunk, sdk_keys(ChatCompletionChunk) | {"error"}),
        (T.ChatChunkChoice, sdk_keys(chat_completion_chunk.Choice)),
        (T.ChatDelta, sdk_keys(chat_completion_chunk.ChoiceDelta)),
        (T.ChatDeltaToolCall, sdk_keys(chat_completion_chunk.ChoiceDeltaToolCall)),
        (T.ChatDeltaFunction, sdk_keys(chat_completion_chunk.ChoiceDeltaToolCallFunction)),
        (
            T.ChatRequest,
            sdk_keys(
                completion_create_params.CompletionCreateParamsStreaming,
                completion_create_params.CompletionCreateParamsNonStreaming,
            ),
        ),
        (T.StreamOptions, sdk_keys(ChatCompletionStreamOptionsParam)),
    ]
    for td, keys in pairs:
        assert declared(td) <= keys, (td.__name__, declared(td) - keys)


def test_openai_responses_shapes() -> None:
    pytest.importorskip("openai.types.responses", reason="an openai SDK before the Responses API")
    from openai.types.responses import (
        Response,
        ResponseOutputItem,
        ResponseOutputRefusal,
        ResponseOutputText,
        ResponseStreamEvent,
        ResponseUsage,
        response_usage,
    )
    from openai.types.shared import ErrorObject

    pairs = [
        (T.ResponsesBody, sdk_keys(Response)),
        (T.ResponsesUsage, sdk_keys(ResponseUsage)),
        (T.InputTokensDetails, sdk_keys(response_usage.InputTokensDetails)),
        (T.ResponsesOutputItem, sdk_keys(ResponseOutputItem)),
        (T.ResponsesContentPart, sdk_keys(ResponseOutputText, ResponseOutputRefusal)),
        # the proxy's own error event also nests the error object, as the chat API does
        (T.ResponsesEvent, sdk_keys(ResponseStreamEvent) | {"error"}),
        (T.OpenAIError, sdk_keys(ErrorObject)),
    ]
    for td, keys in pairs:
        assert declared(td) <= keys, (td.__name__, declared(td) - keys)


def test_anthropic_messages_shapes() -> None:
    if not hasattr(anthropic_types, "ErrorResponse"):
        pytest.skip("an anthropic SDK without typed error responses")
    from anthropic.types import (
        ContentBlock,
        ErrorResponse,
        Message,
        RawMessageStreamEvent,
        Usage,
    )
    from anthropic.types import raw_message_delta_event as delta_event

    event_keys = sdk_keys(RawMessageStreamEvent) | sdk_keys(ErrorResponse)
    delta_keys = sdk_keys(delta_event.Delta, anthropic_types.RawContentBlockDelta)
    pairs = [
        (T.AnthropicMessage, sdk_keys(Message)),
        (T.AnthropicUsage, sdk_keys(Usage)),
        (T.AnthropicContentBlock, sdk_keys(ContentBlock)),
        (T.AnthropicDelta, delta_keys),
        (T.AnthropicEvent, event_keys),
        (T.AnthropicErrorBody, sdk_keys(ErrorResponse)),
        (T.AnthropicError, sdk_keys(anthropic_types.ErrorObject)),
    ]
    for td, keys in pairs:
        assert declared(td) <= keys, (td.__name__, declared(td) - keys)
