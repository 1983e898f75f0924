"""Forward one model request to the arm's real endpoint, with the harness's retries.

Used by the metering proxy for every served API, streamed or not. The real key is added
here (``Authorization: Bearer`` for OpenAI-kind upstreams, ``x-api-key`` for Anthropic) and
never leaves the harness process. Transient failures (408, 425, 429, 5xx, connection
errors, a 2xx whose body is not the API's JSON) are retried with the same backoff as
``ChatClient``, honouring ``Retry-After``, each cause logged once per endpoint; one upstream
request is made per try. A stream is retried only until its status line arrives: once
events flow, a cut is reported, never replayed. Another 4xx is returned as it came: the
proxy decides what it means.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import anyio
import httpx

from harness.errors import ModelUnavailable
from harness.jsontypes import JSONObject
from harness.models.client import (
    _RETRY_STATUSES,
    ChatClient,
    _error_text,
    _json_object,
    _retry_after,
    _snippet,
    pooled_client,
)
from harness.models.wire import WireAPI

ANTHROPIC_VERSION = "2023-06-01"
PASSED_REQUEST_HEADERS = ("anthropic-version", "anthropic-beta", "openai-beta")
"""Request headers of the program that reach the upstream (they select API versions)."""


class UpstreamExhausted(ModelUnavailable):
    """The upstream kept failing through every retry."""

    def __init__(
        self,
        message: str,
        status: int | None,
        retry_after: str | None,
        *,
        endpoint: str | None = None,
        cause: str | None = None,
    ):
        super().__init__(message, endpoint=endpoint, cause=cause)
        self.status = status
        """The last HTTP status seen (None after a connection error or timeout)."""
        self.retry_after = retry_after
        """The last ``Retry-After`` header the upstream sent, as sent."""


@dataclass
class UpstreamReply:
    """A non-transient answer: a whole body, or an open 2xx event stream."""

    status: int
    body: bytes
    data: JSONObject | None
    attempts: int
    latency_s: float
    stream: httpx.Response | None = None
    headers: dict[str, str] = field(default_factory=dict)


def upstream_headers(client: ChatClient, provider: str, request: dict[str, str]) -> dict[str, str]:
    """The headers sent upstream: the real key in the provider's form, the passed headers."""
    headers = {"Content-Type": "application/json"}
    for name in PASSED_REQUEST_HEADERS:
        if name in request:
            headers[name] = request[name]
    auth = client._headers().get("Authorization")
    if provider == "anthropic":
        headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
        if auth:
            headers["x-api-key"] = auth.removeprefix("Bearer ")
    elif auth:
        headers["Authorization"] = auth
    return headers


# long: the retry loop handles every transport outcome (connect error, timeout, transient status) in
#   one place.
async def send(
    client: ChatClient,
    api: WireAPI,
    payload: JSONObject,
    request_headers: dict[str, str],
    *,
    stream: bool,
) -> UpstreamReply:
    """POST ``payload`` to the upstream's ``api.path``; retry what is transient.

    Returns the first non-transient reply (a 2xx, or a 4xx the program should see). Raises
    ``UpstreamExhausted`` when the retries run out. The caller closes ``reply.stream``.
    """
    settings = client.settings
    url = f"{client.base_url}/{api.path}"
    http = pooled_client(client.base_url)
    attempts = settings.max_retries + 1
    start = time.monotonic()
    reason, last_status, last_retry_after = "no attempt made", None, None
    cause = "unknown"
    for attempt in range(attempts):
        retry_after: float | None = None
        body: bytes | None = None
        try:
            client.check_up()
        except ModelUnavailable as exc:  # the run is stopping because of this upstream
            raise UpstreamExhausted(
                str(exc), None, None, endpoint=exc.endpoint, cause=exc.cause
            ) from None
        try:
            request = http.build_request(
                "POST",
                url,
                content=json.dumps(payload).encode(),
                headers=upstream_headers(client, api.provider, request_headers),
                timeout=httpx.Timeout(settings.timeout_s),
            )
            response = await http.send(request, stream=True)
            status = response.status_code
            is_stream = "text/event-stream" in response.headers.get("content-type", "")
            if stream and 200 <= status < 300 and is_stream:
                return UpstreamReply(
                    status,
                    b"",
                    None,
                    attempt + 1,
                    time.monotonic() - start,
                    stream=response,
                    headers=dict(response.headers),
                )
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        except httpx.TimeoutException as exc:
            reason = f"timed out after {settings.timeout_s}s ({type(exc).__name__})"
            last_status, last_retry_after, cause = None, None, "timeout"
        except httpx.TransportError as exc:
            reason = f"connection error ({type(exc).__name__}: {exc})"
            last_status, last_retry_after, cause = None, None, "connection error"
        if body is not None:
            data = _json_object(body)
            last_status = status
            last_retry_after = response.headers.get("retry-after")
            if status in _RETRY_STATUSES or status >= 500:
                retry_after = _retry_after(last_retry_after)
                reason = f"HTTP {status}: {_error_text(data) if data else _snippet(body)}"
                cause = f"HTTP {status}"
            elif status >= 400:
                elapsed = time.monotonic() - start
                return UpstreamReply(status, body, data, attempt + 1, elapsed)
            elif data is None or not api.valid(data):
                what = "a malformed JSON body" if data is None else "an unexpected body"
                reason = f"HTTP {status} with {what}: {_snippet(body)}"
                last_status, last_retry_after, cause = 502, None, "malformed reply"
            else:
                return UpstreamReply(status, body, data, attempt + 1, time.monotonic() - start)
        reason = client.redact(reason)
        if attempt + 1 >= attempts:
            break
        delay = client._delay(attempt, retry_after)
        client.note_retry(cause, reason, api.name)
        await anyio.sleep(delay)
    raise UpstreamExhausted(
        f"model '{settings.name}' at {client.base_url} ({api.name}) failed {attempts} "
        f"time(s); last: {reason}",
        last_status,
        last_retry_after,
        endpoint=client.base_url,
        cause=cause,
    )


__all__ = ["UpstreamExhausted", "UpstreamReply", "send", "upstream_headers"]
