"""A metering proxy: an OpenAI-compatible pass-through on loopback for external agent programs.

The ``command`` agent starts one proxy per trial and points the program at it
(``OPENAI_BASE_URL``) with a per-trial dummy token (``OPENAI_API_KEY``). The proxy checks the
token, forwards ``POST …/chat/completions`` to the arm's real endpoint with the real API key
(read from the environment by ``ChatClient``; the program never sees it), and for each call:

- records a ``model_call`` trajectory event with tokens, cost and latency;
- charges the trial (tokens, cost, one step per call), so the suite's budgets hold;
- once a budget is exceeded, answers this and every later call with HTTP 402 and a
  ``budget_exceeded`` error, and sets ``exceeded`` (the agent then stops the program);
- retries transient upstream failures like any harness client; when they persist it answers
  503 and keeps the ``ModelUnavailable`` in ``infra_error`` (the trial is retried as infra).

The arm's model name replaces the one the program sends (``force_model``), so the model under
test and its price are the arm's. ``GET …/models`` lists that one model. Streaming
(``stream: true``) is refused with 400: the proxy meters whole responses only.

The server is plain anyio + h11 (h11 already ships with httpx): no web framework.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import h11
from anyio.abc import SocketAttribute, SocketStream

from harness.config.models import ModelSettings
from harness.errors import BudgetExceeded, ModelUnavailable
from harness.models.client import ChatClient, ModelUsage, valid_completion
from harness.models.metering import meter_call
from harness.models.pricing import price_for

if TYPE_CHECKING:
    from harness.agents.base import AgentContext

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 1024 * 1024


class MeteringProxy:
    """One trial's proxy. Start it with ``metering_proxy(ctx, settings)``."""

    def __init__(
        self,
        ctx: AgentContext,
        settings: ModelSettings,
        *,
        client: ChatClient | None = None,
        force_model: bool = True,
    ):
        self.ctx = ctx
        self.client = client or ChatClient(settings)
        self.settings = self.client.settings  # ${VAR} references resolved
        self.price = price_for(self.settings)
        self.force_model = force_model
        self.token = "harness-trial-" + secrets.token_urlsafe(24)
        """The dummy key the program must send; it opens nothing but this proxy."""
        self.host = "127.0.0.1"
        self.port = 0
        self.unix_path: str | None = None
        """Set when the proxy listens on a unix socket instead (programs inside a container
        reach it through ``harness.sandbox.relay``)."""
        self.exceeded: BudgetExceeded | None = None
        self.infra_error: ModelUnavailable | None = None
        self.budget_event = anyio.Event()
        self.calls = 0

    def __repr__(self) -> str:
        return f"MeteringProxy(model={self.settings.name!r}, url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        if self.unix_path is not None:
            return f"http+unix://{self.unix_path}/v1"
        return f"http://{self.host}:{self.port}/v1"

    # -- HTTP ---------------------------------------------------------------------------------
    async def _connection(self, stream: SocketStream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        async with stream:
            while True:
                try:
                    request, body = await self._read_request(conn, stream)
                except (h11.RemoteProtocolError, ValueError) as exc:
                    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                        await self._send(conn, stream, 400, {"error": _err(str(exc), "bad")})
                    return
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    return
                if request is None:
                    return
                try:
                    status, payload = await self._handle(request, body)
                except Exception as exc:  # a bug of ours: answer, log, keep serving
                    log.exception("metering proxy failed on %s", request.target)
                    status, payload = 500, {"error": _err(f"proxy error: {type(exc).__name__}")}
                try:
                    await self._send(conn, stream, status, payload)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    return

    async def _read_request(
        self, conn: h11.Connection, stream: SocketStream
    ) -> tuple[h11.Request | None, bytes]:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive(65536)
                except anyio.EndOfStream:
                    data = b""
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY_BYTES:
                    raise ValueError("request body too large")
            elif isinstance(event, h11.EndOfMessage):
                return request, bytes(body)
            else:  # ConnectionClosed or PAUSED
                return None, b""

    async def _send(
        self, conn: h11.Connection, stream: SocketStream, status: int, payload: dict[str, Any]
    ) -> None:
        data = self.client.redact(json.dumps(payload)).encode()
        headers = [
            ("content-type", "application/json"),
            ("content-length", str(len(data))),
        ]
        await stream.send(conn.send(h11.Response(status_code=status, headers=headers)))
        await stream.send(conn.send(h11.Data(data=data)))
        await stream.send(conn.send(h11.EndOfMessage()))

    # -- semantics ----------------------------------------------------------------------------
    async def _handle(self, request: h11.Request, body: bytes) -> tuple[int, dict[str, Any]]:
        method = request.method.decode()
        path = request.target.decode().split("?", 1)[0].rstrip("/")
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in request.headers}
        auth = headers.get("authorization", "")
        if not hmac.compare_digest(auth.encode(), f"Bearer {self.token}".encode()):
            return 401, {"error": _err("invalid harness proxy token", "invalid_api_key")}
        if method == "GET" and path.endswith("/models"):
            return 200, {
                "object": "list",
                "data": [{"id": self.settings.name, "object": "model", "owned_by": "harness"}],
            }
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, {"error": _err(f"the harness proxy serves only chat/completions ({path})")}
        if self.exceeded is not None:
            return 402, self._budget_error()
        try:
            payload = json.loads(body)
        except ValueError as exc:
            return 400, {"error": _err(f"request body is not JSON: {exc}", "invalid_request")}
        if not isinstance(payload, dict):
            return 400, {"error": _err("request body must be a JSON object", "invalid_request")}
        if payload.get("stream"):
            return 400, {
                "error": _err(
                    "streaming is not supported by the harness metering proxy; send stream=false",
                    "invalid_request",
                )
            }
        requested = payload.get("model")
        if self.force_model or not requested:
            payload["model"] = self.settings.name
        return await self._forward(payload, requested)

    async def _forward(self, payload: dict[str, Any], requested: Any) -> tuple[int, dict[str, Any]]:
        ctx = self.ctx
        start = time.monotonic()
        self.calls += 1
        try:
            result = await self.client.post("chat/completions", payload, validate=valid_completion)
        except ModelUnavailable as exc:
            self.infra_error = exc
            ctx.trajectory.record(
                "model_call",
                content=str(exc),
                ok=False,
                args={"model": payload["model"], "source": "proxy", "error": "model_unavailable"},
                latency_s=time.monotonic() - start,
            )
            return 503, {"error": _err(str(exc), "model_unavailable")}
        info: dict[str, Any] = {
            "model": result.data.get("model") or payload["model"],
            "requested_model": requested,
            "source": "proxy",
            "attempts": result.attempts,
        }
        if result.status >= 400:
            if result.status in (401, 403, 404):  # our key, URL or model name: infrastructure
                self.infra_error = ModelUnavailable(
                    self.client.redact(
                        f"HTTP {result.status} from {self.settings.base_url}: "
                        f"{json.dumps(result.data)[:300]}"
                    )
                )
            ctx.trajectory.record(
                "model_call",
                content=self.client.redact(json.dumps(result.data))[:2000],
                ok=False,
                args={**info, "status": result.status},
                latency_s=result.latency_s,
            )
            return result.status, result.data
        message = result.data["choices"][0].get("message") or {}
        calls = message.get("tool_calls") or []
        info["tool_calls"] = [
            (c.get("function") or {}).get("name") for c in calls if isinstance(c, dict)
        ]
        content = message.get("content")
        try:
            meter_call(
                ctx,
                ModelUsage.from_response(result.data),
                self.price,
                latency_s=result.latency_s,
                content=content if isinstance(content, str) else None,
                info=info,
                steps=1,
            )
        except BudgetExceeded as exc:
            self.exceeded = exc
            self.budget_event.set()
            return 402, self._budget_error()
        return 200, result.data

    def _budget_error(self) -> dict[str, Any]:
        exc = self.exceeded
        return {"error": _err(f"harness budget exceeded: {exc}", "budget_exceeded")}


def _err(message: str, type_: str = "harness_proxy_error") -> dict[str, Any]:
    return {"message": message, "type": type_, "code": type_}


@asynccontextmanager
async def metering_proxy(
    ctx: AgentContext,
    settings: ModelSettings,
    *,
    client: ChatClient | None = None,
    force_model: bool = True,
    unix_path: str | None = None,
) -> AsyncIterator[MeteringProxy]:
    """Run a ``MeteringProxy`` for the duration of the block: on 127.0.0.1 (a free port), or
    on the unix socket ``unix_path`` (connectable by any local user: the token guards it)."""
    proxy = MeteringProxy(ctx, settings, client=client, force_model=force_model)
    listener: Any
    if unix_path is None:
        listener = await anyio.create_tcp_listener(local_host=proxy.host, local_port=0)
        proxy.port = listener.extra(SocketAttribute.local_port)
    else:
        listener = await anyio.create_unix_listener(unix_path)
        os.chmod(unix_path, 0o666)  # the container's user connects to it
        proxy.unix_path = unix_path
    error: Exception | None = None
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, proxy._connection)
        try:
            yield proxy
        except Exception as exc:  # re-raised below, not wrapped in an ExceptionGroup
            error = exc
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error


__all__ = ["MeteringProxy", "metering_proxy"]
