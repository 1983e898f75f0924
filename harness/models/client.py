"""An async OpenAI-compatible chat-completions client over httpx.

One pooled ``httpx.AsyncClient`` per (event loop, base URL) is shared by every trial of the
process. The API key is read from the environment variable named in the settings at the
moment a request is sent: it is never stored on an object, logged, put into an exception
message or chained exception, or passed into a sandbox.

Transient failures (408, 425, 429, 5xx, connection errors, timeouts, malformed or truncated
JSON) are retried with jittered exponential backoff, honouring ``Retry-After``; each cause is
logged once per endpoint (``harness.models.upstreams``). When the retries run out,
``ModelUnavailable`` (an infrastructure error the orchestrator retries) is raised, naming the
endpoint and the cause for the run's circuit breaker. A request the endpoint rejects as
invalid (400, 409, 413, 422: usually a transcript that outgrew the context window) raises
``ModelRequestRejected``, an agent failure. 401 and 403 (the harness's key refused) raise
``ModelKeyRejected`` and 404 (a wrong URL or model name in the suite, since the harness built
the request) ``ModelNotFound``: either stops the run. Another 4xx raises ``ModelUnavailable``
without retrying.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import httpx

from harness.config.models import ModelSettings
from harness.errors import (
    AgentFailure,
    ConfigError,
    ModelKeyRejected,
    ModelNotFound,
    ModelUnavailable,
)
from harness.jsontypes import JSONObject
from harness.models.api_types import ChatCompletion, ChatCompletionChunk, ChatRequest
from harness.models.chat import ChatMessage, ToolCall, ToolSchema
from harness.models.upstreams import loop_token

log = logging.getLogger(__name__)

DEFAULT_BACKOFF_BASE_S = 0.5
"""Base of the exponential backoff between retries, seconds (tests set it tiny)."""
DEFAULT_BACKOFF_MAX_S = 20.0
"""Longest computed backoff between two retries, seconds."""
DEFAULT_RETRY_AFTER_MAX_S = 60.0
"""Longest ``Retry-After`` the client honours; a longer one is cut to this."""

_RETRY_STATUSES = frozenset({408, 425, 429})
_REJECT_STATUSES = frozenset({400, 409, 413, 422})
_KEY_STATUSES = frozenset({401, 403})


class ModelRequestRejected(AgentFailure):
    """The endpoint refused the request as invalid (e.g. context length exceeded)."""

    def __init__(self, detail: str):
        super().__init__("model_request_rejected", detail)


# ------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class ModelUsage:
    """Tokens of one model call. ``input_tokens`` includes ``cached_tokens`` (the OpenAI
    convention: cached tokens are the part of the prompt served from the cache)."""

    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    """Prompt tokens written to the cache (Anthropic's ``cache_creation_input_tokens``)."""
    reported: bool = True
    """False when the endpoint sent no usage block: tokens (and cost) are then unknown."""

    @classmethod
    def from_response(cls, data: ChatCompletion | ChatCompletionChunk) -> ModelUsage:
        """The usage block of a chat completion or of its last streamed chunk."""
        usage = data.get("usage")
        if not isinstance(usage, dict):
            return cls(reported=False)
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        return cls(
            input_tokens=_int(usage.get("prompt_tokens")),
            cached_tokens=_int(cached),
            output_tokens=_int(usage.get("completion_tokens")),
        )


@dataclass(frozen=True)
class ToolCallRequest:
    """One function call the model asked for. ``arguments`` is the raw JSON text, as sent."""

    id: str
    name: str
    arguments: str


@dataclass
class HTTPResult:
    """The final response of a (retried) request: 2xx with a JSON object, or a 4xx."""

    status: int
    data: JSONObject
    latency_s: float
    attempts: int


@dataclass
class ChatResponse:
    """One chat completion: the assistant message, its tool calls and the call's usage."""

    message: ChatMessage
    """The assistant message as returned (role, content, tool_calls), for the history."""
    content: str | None
    tool_calls: list[ToolCallRequest]
    usage: ModelUsage
    finish_reason: str | None
    model: str | None
    latency_s: float
    attempts: int
    raw: ChatCompletion = field(repr=False, default_factory=lambda: ChatCompletion())


# ------------------------------------------------------------------------------ pool
_POOLS: weakref.WeakKeyDictionary[object, dict[str, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def pooled_client(base_url: str) -> httpx.AsyncClient:
    """The process's shared ``AsyncClient`` for ``base_url`` in the running event loop."""
    pools = _POOLS.setdefault(loop_token(), {})
    client = pools.get(base_url)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            follow_redirects=False,
        )
        pools[base_url] = client
    return client


async def aclose_clients() -> None:
    """Close the pooled clients of the running event loop (call at the end of a run)."""
    pools = _POOLS.pop(loop_token(), {})
    for client in pools.values():
        await client.aclose()


# ------------------------------------------------------------------------------ client
class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint described by ``settings``.

    ``${VAR}`` references in the settings' name and base URL are resolved on construction
    (``harness.models.settings.expand_env``); ``self.settings`` holds the resolved copy.
    """

    def __init__(
        self,
        settings: ModelSettings,
        *,
        backoff_base_s: float | None = None,
        backoff_max_s: float = DEFAULT_BACKOFF_MAX_S,
        retry_after_max_s: float = DEFAULT_RETRY_AFTER_MAX_S,
        rng: random.Random | None = None,
    ):
        from harness.models.settings import expand_env

        settings = expand_env(settings)
        if settings.api_key_env and settings.api_key_env not in os.environ:
            raise ConfigError(
                "model",
                "api_key_env",
                f"environment variable {settings.api_key_env} (the API key of model "
                f"'{settings.name}') is not set",
            )
        self.settings = settings
        self.base_url = settings.base_url.rstrip("/")
        self.backoff_base_s = DEFAULT_BACKOFF_BASE_S if backoff_base_s is None else backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self._rng = rng or random.Random()

    def __repr__(self) -> str:
        return f"ChatClient(model={self.settings.name!r}, base_url={self.base_url!r})"

    # -- high level ---------------------------------------------------------------------
    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSchema] | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        **params: Any,
    ) -> ChatResponse:
        """One chat completion. ``temperature`` overrides the settings' when given."""
        s = self.settings
        payload: ChatRequest = {"model": s.name, "messages": messages}
        temp = s.temperature if temperature is None else temperature
        if temp is not None:
            payload["temperature"] = temp
        if s.max_tokens is not None:
            payload["max_tokens"] = s.max_tokens
        if tools:
            payload["tools"] = tools
        if seed is not None:
            payload["seed"] = seed
        # the settings' extra keys, then the call's, as given (they may override the above)
        body: dict[str, object] = {**payload, **s.extra, **params}
        result = await self.post("chat/completions", body, validate=valid_completion)
        if result.status >= 400:
            detail = f"HTTP {result.status} from {self.base_url}: {_error_text(result.data)}"
            if result.status in _REJECT_STATUSES:
                raise ModelRequestRejected(self.redact(detail))
            raise self.refused(result.status, detail)
        return _parse_completion(result)

    def refused(self, status: int, detail: str) -> ModelUnavailable:
        """The error for a final 4xx the request itself did not cause: the key refused
        (401, 403) or, for a request the harness built, the suite's model name or URL wrong
        (404); either stops the run. Another status: the endpoint unavailable."""
        kind: type[ModelUnavailable] = ModelUnavailable
        if status in _KEY_STATUSES:
            kind = ModelKeyRejected
        elif status == 404:
            kind = ModelNotFound
        return kind(self.redact(detail), endpoint=self.base_url, cause=f"HTTP {status}")

    # -- low level ----------------------------------------------------------------------
    async def post(
        self,
        path: str,
        payload: Mapping[str, object],
        *,
        validate: Callable[[JSONObject], bool] | None = None,
    ) -> HTTPResult:
        """POST ``payload`` to ``base_url/path`` with retries.

        Returns the first non-transient response: a 2xx whose body is a JSON object (and
        passes ``validate``), or a non-retryable 4xx. Raises ``ModelUnavailable`` when the
        transient failures outlast ``settings.max_retries``.
        """
        url = f"{self.base_url}/{path.lstrip('/')}"
        client = pooled_client(self.base_url)
        attempts = self.settings.max_retries + 1
        start = time.monotonic()
        reason, cause = "no attempt made", "unknown"
        for attempt in range(attempts):
            retry_after: float | None = None
            self.check_up()
            try:
                response = await client.post(
                    url,
                    json=payload,
                    headers=self._headers(),
                    timeout=httpx.Timeout(self.settings.timeout_s),
                )
                body = response.content
            except httpx.TimeoutException as exc:
                reason = f"timed out after {self.settings.timeout_s}s ({type(exc).__name__})"
                cause = "timeout"
            except httpx.TransportError as exc:
                reason = f"connection error ({type(exc).__name__}: {exc})"
                cause = "connection error"
            else:
                status = response.status_code
                data = _json_object(body)
                if status in _RETRY_STATUSES or status >= 500:
                    retry_after = _retry_after(response.headers.get("retry-after"))
                    reason = f"HTTP {status}: {_error_text(data) if data else _snippet(body)}"
                    cause = f"HTTP {status}"
                elif status >= 400:
                    return HTTPResult(status, data or {}, time.monotonic() - start, attempt + 1)
                elif data is None:
                    reason = f"HTTP {status} with a malformed JSON body: {_snippet(body)}"
                    cause = "malformed reply"
                elif validate is not None and not validate(data):
                    reason = f"HTTP {status} with an unexpected body: {_snippet(body)}"
                    cause = "malformed reply"
                else:
                    return HTTPResult(status, data, time.monotonic() - start, attempt + 1)
            reason = self.redact(reason)
            if attempt + 1 >= attempts:
                break
            delay = self._delay(attempt, retry_after)
            self.note_retry(cause, reason)
            await anyio.sleep(delay)
        raise self.exhausted(attempts, reason, cause)

    def check_up(self) -> None:
        """Refuse to send when the run's breaker stopped the run because of this endpoint."""
        from harness.models.upstreams import down_reason

        why = down_reason(self.base_url)
        if why is not None:
            raise ModelUnavailable(
                f"model '{self.settings.name}' at {self.base_url}: not called, the run is "
                f"stopping ({why})",
                endpoint=self.base_url,
                cause="run stopping",
            )

    def note_retry(self, cause: str, reason: str, api: str | None = None) -> None:
        from harness.models.upstreams import note_retry

        where = f"{self.base_url} ({api})" if api else self.base_url
        note_retry(self.base_url, cause, f"model {self.settings.name} at {where}: {reason}")

    def exhausted(self, attempts: int, reason: str, cause: str) -> ModelUnavailable:
        return ModelUnavailable(
            f"model '{self.settings.name}' at {self.base_url} failed {attempts} time(s); "
            f"last: {reason}",
            endpoint=self.base_url,
            cause=cause,
        )

    # -- helpers --------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        name = self.settings.api_key_env
        if name:
            key = os.environ.get(name)
            if not key:
                raise ModelKeyRejected(
                    f"environment variable {name} is no longer set",
                    endpoint=self.base_url,
                    cause=f"{name} unset",
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def redact(self, text: str) -> str:
        """Remove the API key from a message that quotes the endpoint's words."""
        name = self.settings.api_key_env
        key = os.environ.get(name) if name else None
        return text.replace(key, "***") if key else text

    def redact_bytes(self, data: bytes) -> bytes:
        """``redact`` for bytes as they came from the upstream (a stream's events)."""
        name = self.settings.api_key_env
        key = os.environ.get(name) if name else None
        return data.replace(key.encode(), b"***") if key else data

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(self.backoff_max_s, self.backoff_base_s * 2**attempt)
        delay = backoff * (0.5 + 0.5 * self._rng.random())
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.retry_after_max_s))
        return delay


# ------------------------------------------------------------------------------ parsing
def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _json_object(body: bytes) -> JSONObject | None:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _snippet(body: bytes, n: int = 200) -> str:
    text = body[:n].decode("utf-8", errors="replace")
    return repr(text) + ("…" if len(body) > n else "")


def _error_text(data: JSONObject) -> str:
    err = data.get("error")
    if isinstance(err, dict):
        return str(err.get("message") or err)[:300]
    return str(err or data)[:300]


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds (fractions allowed) or a date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def valid_completion(data: JSONObject) -> bool:
    """A chat completion whose first choice has a message (what ``chat`` reads)."""
    choices = data.get("choices")
    return (
        isinstance(choices, list)
        and bool(choices)
        and isinstance(choices[0], dict)
        and isinstance(choices[0].get("message"), dict)
    )


def _parse_completion(result: HTTPResult) -> ChatResponse:
    data = cast(ChatCompletion, result.data)  # post() returned it after valid_completion
    choice = data["choices"][0]
    message = choice["message"].copy()
    message.setdefault("role", "assistant")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content)
    calls: list[ToolCallRequest] = []
    raw_calls = message.get("tool_calls") or []
    normalised: list[ToolCall] = []
    for i, call in enumerate(raw_calls if isinstance(raw_calls, list) else []):
        raw_fn = call.get("function") if isinstance(call, dict) else None
        fn: dict[str, object] = dict(raw_fn) if isinstance(raw_fn, dict) else {}
        call_id = (call.get("id") if isinstance(call, dict) else None) or f"call_{i}"
        raw_name = fn.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        raw_args = fn.get("arguments")
        if raw_args is None:
            args = ""
        else:
            args = raw_args if isinstance(raw_args, str) else json.dumps(raw_args)
        calls.append(ToolCallRequest(id=str(call_id), name=name, arguments=args))
        normalised.append(
            {
                "id": str(call_id),
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
        )
    if normalised:
        message["tool_calls"] = normalised
    else:
        message.pop("tool_calls", None)
    return ChatResponse(
        message=message,  # the provider's message, tool calls normalised
        content=content,
        tool_calls=calls,
        usage=ModelUsage.from_response(data),
        finish_reason=choice.get("finish_reason"),
        model=data.get("model"),
        latency_s=result.latency_s,
        attempts=result.attempts,
        raw=data,
    )


__all__ = [
    "ChatClient",
    "ChatResponse",
    "HTTPResult",
    "ModelRequestRejected",
    "ModelUsage",
    "ToolCallRequest",
    "aclose_clients",
    "pooled_client",
    "valid_completion",
]
