"""A metering proxy: the one way an external agent program reaches the arm's model.

The ``command`` agent (and the ready-made CLI agents built on it) starts one proxy per
trial and points the program at it (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``) with a
per-trial token as the API key, worthless outside the trial. The proxy checks the token
(``Authorization: Bearer`` or ``x-api-key``), forwards the call to the arm's real endpoint
with the real key (``harness.models.upstream``; the program never sees it) and for each call:

- records one ``model_call`` trajectory event with tokens, cost and latency, streamed or not;
- charges the trial (tokens, cost, one step per model call), so the suite's budgets hold;
- admits a call only while the trial has budget left (``harness.models.admission``: one
  call in flight at a time under a token or cost budget, steps reserved when admitted), so
  a trial overshoots a budget by at most one call however many calls its program makes at
  once; calls still in flight when the trial stops get a grace period to finish and be
  metered (past it, each is recorded with unknown usage);
- meters a stream once, on the final figure of its usage (the shapes servers really send:
  ``harness.models.wire``), and ends it early when the figure so far breaks a budget;
- once a budget is exceeded, ends the call with the API's own error (HTTP 402, or an error
  event that ends the stream: the SDKs raise it), answers every later call the same way,
  and sets ``exceeded`` (the agent then stops the program: the agent's failure);
- retries transient upstream failures; when they persist it answers with the last status,
  ``x-should-retry: false`` and the upstream's ``Retry-After``, and keeps the
  ``ModelUnavailable`` in ``infra_error`` (the trial is retried as infrastructure). A stream
  the upstream cuts short is an infrastructure error too.
- passes any other 4xx on unchanged: the program's request caused it (an unknown
  ``previous_response_id``, a bad parameter, a context too long), so it is the agent's to
  handle, never an infrastructure error; only 401 and 403 (the harness's own key refused)
  stop the program and, through the run's breaker, the run (exit 5).

Served (``harness.models.wire``): OpenAI chat completions and Responses when the arm's
``model.api`` is ``openai``, Anthropic Messages when it is ``anthropic``; each plain or
streamed (server-sent events relayed event by event, unchanged). Streams are made to report
usage where the API allows (chat: ``stream_options.include_usage``). Anything else the
program asks for (another API, the other provider's API) is answered 404 and kept in
``config_error``: the suite does not fit the program, which is not the agent's failure.

The arm's model name replaces the one the program sends (``force_model``), so the model under
test and its price are the arm's. ``GET …/models`` lists that one model.

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
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING

import anyio
import h11
import httpx
from anyio.abc import Listener, SocketAttribute, SocketStream

from harness.config.models import ModelSettings
from harness.errors import BudgetExceeded, ConfigError, ModelUnavailable
from harness.jsontypes import JSONObject, JSONValue
from harness.models.admission import Admission
from harness.models.api_types import ErrorBody
from harness.models.client import ChatClient, ModelUsage
from harness.models.metering import (
    ModelCallInfo,
    estimate_usage,
    meter_call,
    with_info,
)
from harness.models.pricing import price_for
from harness.models.responder import Responder, proxy_error, serve_connection
from harness.models.sse import SSESplitter
from harness.models.upstream import UpstreamExhausted, send
from harness.models.wire import APIS, PROVIDER_APIS, StreamState, WireAPI, api_for_path

if TYPE_CHECKING:
    from harness.agents.base import AgentContext

log = logging.getLogger(__name__)

KEY_STATUSES = frozenset({401, 403})
"""Upstream statuses that refuse the harness's own key, whatever the program asked."""
NO_RETRY = ("x-should-retry", "false")
"""Tells the OpenAI and Anthropic SDKs not to retry: the proxy has retried already."""


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
        self.config_error: ConfigError | None = None
        """The first request the proxy could not serve (an API or provider the arm lacks)."""
        self.stop_event = anyio.Event()
        """Set when the program must be stopped: a budget is exceeded or a call was unservable."""
        self.calls = 0
        self.unmetered_calls = 0
        """Calls whose upstream reported no usage: their tokens and cost are unknown."""
        self.served = PROVIDER_APIS[self.settings.api]
        self.admission = Admission(
            ctx.budgets, lambda: ctx.usage.tokens_total, lambda: ctx.usage.steps, self.price
        )

    def __repr__(self) -> str:
        return f"MeteringProxy(model={self.settings.name!r}, url={self.base_url!r})"

    @property
    def origin(self) -> str:
        """Scheme, host and port (Anthropic clients append ``/v1/messages`` themselves)."""
        if self.unix_path is not None:
            return f"http+unix://{self.unix_path}"
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    # -- HTTP ---------------------------------------------------------------------------------
    async def _connection(self, stream: SocketStream) -> None:
        await serve_connection(stream, self._handle, self.client.redact, [NO_RETRY])

    # -- semantics ----------------------------------------------------------------------------
    def _authorised(self, headers: dict[str, str]) -> bool:
        want = self.token.encode()
        bearer = headers.get("authorization", "").removeprefix("Bearer ").strip().encode()
        key = headers.get("x-api-key", "").strip().encode()
        return hmac.compare_digest(bearer, want) or hmac.compare_digest(key, want)

    async def _handle(self, request: h11.Request, body: bytes, out: Responder) -> None:
        method = request.method.decode()
        path = request.target.decode().split("?", 1)[0].rstrip("/")
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in request.headers}
        if not self._authorised(headers):
            await out.json(
                401, {"error": proxy_error("invalid harness proxy token", "invalid_api_key")}
            )
            return
        if method == "GET" and path.endswith("/models"):
            model = {"id": self.settings.name, "object": "model", "owned_by": "harness"}
            await out.json(200, {"object": "list", "data": [model]})
            return
        api = api_for_path(path) if method == "POST" else None
        if api is None or api.name not in self.served:
            await self._unserved(method, path, api, out)
            return
        if self.exceeded is not None:
            await out.json(402, self._budget_error(api), [NO_RETRY])
            return
        try:
            payload = json.loads(body)
        except ValueError as exc:
            err = api.error_body(f"request body is not JSON: {exc}", "invalid_request_error")
            await out.json(400, err)
            return
        if not isinstance(payload, dict):
            err = api.error_body("request body must be a JSON object", "invalid_request_error")
            await out.json(400, err)
            return
        requested = payload.get("model")
        if self.force_model or not requested:
            payload["model"] = self.settings.name
        try:
            async with self.admission.call():
                if self.exceeded is None:  # (a call that waited its turn checks again)
                    await self._forward(api, payload, requested, headers, out)
        except BudgetExceeded as exc:  # no budget left for this call: nothing was sent
            self.exceeded = self.exceeded or exc
            self.stop_event.set()
        if self.exceeded is not None and not out.started:
            await out.json(402, self._budget_error(api), [NO_RETRY])

    def record_cut(self, calls: int) -> None:
        """Calls still in flight after the trial stopped and its grace ran out: each is a
        model call whose usage is unknown (it was spent upstream all the same)."""
        for _ in range(calls):
            info: ModelCallInfo = {"model": self.settings.name, "source": "proxy"}
            info["error"] = "cut_by_trial_end"
            with suppress(BudgetExceeded):
                meter_call(
                    self.ctx,
                    ModelUsage(reported=False),
                    self.price,
                    latency_s=0.0,
                    content="the call was still in flight when the trial stopped",
                    info=info,
                    steps=1,
                )

    async def _unserved(self, method: str, path: str, api: WireAPI | None, out: Responder) -> None:
        """A request the proxy cannot serve: the suite's configuration, not the agent."""
        served = ", ".join(f"{APIS[n].path}" for n in self.served)
        if api is not None:
            why = (
                f"the agent program called the {api.name} API ({method} {path}), which needs "
                f"model.api: {api.provider}; this arm's model has api: {self.settings.api} "
                f"(served: {served})"
            )
        else:
            why = (
                f"the agent program called {method} {path}, which the harness metering proxy "
                f"does not serve (served: {served}, GET models)"
            )
        if self.config_error is None:
            self.config_error = ConfigError("suite", f"arms.{self.ctx.arm.name}.model.api", why)
            log.error("metering proxy: %s", why)
            self.stop_event.set()
        wire = api or APIS[self.served[0]]
        await out.json(404, wire.error_body(why, "not_found_error"), [NO_RETRY])

    async def _forward(
        self,
        api: WireAPI,
        payload: JSONObject,
        requested: JSONValue,
        headers: dict[str, str],
        out: Responder,
    ) -> None:
        start = time.monotonic()
        self.calls += 1
        streaming = bool(payload.get("stream"))
        wanted = api.prepare(payload) if streaming else True
        info: ModelCallInfo = {
            "model": payload["model"],
            "requested_model": requested,
            "source": "proxy",
            "api": api.name,
            "stream": streaming,
        }
        chars = len(json.dumps(payload))  # for the estimate when no usage is reported
        try:
            reply = await send(self.client, api, payload, headers, stream=streaming)
        except UpstreamExhausted as exc:
            await self._exhausted(api, exc, info, start, out)
            return
        info["attempts"] = reply.attempts
        if reply.stream is not None:
            await self._relay(api, reply.stream, wanted, info, start, out, chars)
            return
        data = reply.data or {}
        info["model"] = data.get("model") or payload["model"]
        if reply.status >= 400:
            if reply.status in KEY_STATUSES:  # the harness's own key refused: the run stops
                self.infra_error = self.client.refused(
                    reply.status,
                    f"HTTP {reply.status} from {self.settings.base_url}: "
                    f"{reply.body[:300].decode('utf-8', 'replace')}",
                )
                self.stop_event.set()
            # any other 4xx answers the program's own request (an unknown id, a bad
            # parameter): it reaches the program as sent, and what follows is the agent's
            self.ctx.trajectory.record(
                "model_call",
                content=self.client.redact(reply.body.decode("utf-8", "replace"))[:2000],
                ok=False,
                args=with_info(info, {"status": reply.status}),
                latency_s=reply.latency_s,
            )
            await out.json(reply.status, data or {"error": proxy_error("upstream error")})
            return
        content, tools = api.summary(data)
        usage = api.usage(data)
        try:
            self._meter(usage, content, {**info, "tool_calls": tools}, reply.latency_s, chars)
        except BudgetExceeded:
            await out.json(402, self._budget_error(api), [NO_RETRY])
            return
        await out.json(200, data)

    async def _relay(
        self,
        api: WireAPI,
        upstream: httpx.Response,
        wanted: bool,
        info: ModelCallInfo,
        start: float,
        out: Responder,
        chars: int,
    ) -> None:
        """Pass a stream on event by event; meter the usage; end it early on a budget."""
        state = StreamState()
        splitter = SSESplitter()
        metered = False
        cut: str | None = None
        try:
            await out.start_stream(upstream.status_code)
            try:
                async for chunk in upstream.aiter_bytes():
                    ready: list[bytes] = []  # events that arrived together leave together
                    for event in splitter.feed(chunk):
                        state.events += 1
                        before = state.usage
                        action = api.observe(state, event, event.json(), wanted)
                        now = state.usage
                        over = (
                            now is not before
                            and now is not None
                            and (self.admission.would_exceed(now))
                        )
                        # the stream ends, or its usage so far breaks a budget: meter the
                        # final figure before passing the event on, so a budget ends the call
                        if (state.done or over) and not metered:
                            metered = True
                            try:
                                self._meter_stream(state, info, start, chars)
                            except BudgetExceeded:
                                ready.append(api.error_event(*self._budget_reason()))
                                await out.event(b"".join(ready))
                                await out.end()
                                return
                        if action != "drop":  # a key the upstream echoes never passes
                            ready.append(self.client.redact_bytes(event.raw))
                    if ready:
                        await out.event(b"".join(ready))
            except httpx.HTTPError as exc:
                cut = f"{type(exc).__name__}: {exc}"
            if not state.done:
                cut = cut or f"the stream ended after {state.events} event(s) without its end"
            if cut is None and not metered:
                metered = True
                # nothing left to cut when this breaks a budget: the next call gets the 402
                with suppress(BudgetExceeded):
                    self._meter_stream(state, info, start, chars)
            if cut is not None:
                message = self.client.redact(
                    f"model '{self.settings.name}' at {self.client.base_url} ({api.name}): "
                    f"stream cut by the upstream ({cut})"
                )
                self.infra_error = self.infra_error or ModelUnavailable(
                    message, endpoint=self.client.base_url, cause="stream cut"
                )
                if not metered:
                    self.ctx.trajectory.record(
                        "model_call",
                        content=message,
                        ok=False,
                        args=with_info(info, {"error": "stream_cut", "events": state.events}),
                        latency_s=time.monotonic() - start,
                    )
                await out.event(api.error_event(message, "upstream_stream_cut"))
            await out.end()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            if not metered:  # the program hung up: still one event, with what was reported
                with suppress(BudgetExceeded):
                    hung_up = with_info(info, {"error": "program_hung_up"})
                    self._meter_stream(state, hung_up, start, chars)
            raise
        finally:
            await upstream.aclose()

    def _meter_stream(
        self, state: StreamState, info: ModelCallInfo, start: float, chars: int
    ) -> None:
        usage = state.usage or ModelUsage(reported=False)
        text = "".join(state.text) or None
        full: ModelCallInfo = {**info, "tool_calls": state.tools, "events": state.events}
        if state.upstream_error:
            full["upstream_error"] = state.upstream_error
        self._meter(usage, text, full, time.monotonic() - start, chars)

    def _meter(
        self,
        usage: ModelUsage,
        content: str | None,
        info: ModelCallInfo,
        latency: float,
        request_chars: int,
    ) -> None:
        if not usage.reported:
            self.unmetered_calls += 1
            info = {**info, "usage_estimate": "characters / 4, for budgets only"}
        content = self.client.redact(content) if content is not None else None
        if "upstream_error" in info:
            info = {**info, "upstream_error": self.client.redact(info["upstream_error"])}
        self.admission.settle()  # its step is charged now, not reserved
        try:
            dollars = meter_call(
                self.ctx, usage, self.price, latency_s=latency, content=content, info=info, steps=1
            )
            if usage.reported:
                self.admission.known_cost += dollars or 0.0
            else:
                estimate = estimate_usage(request_chars, len(content or ""))
                self.admission.add_estimate(estimate)
        except BudgetExceeded as exc:
            self.exceeded = exc
            self.stop_event.set()
            raise

    async def _exhausted(
        self,
        api: WireAPI,
        exc: UpstreamExhausted,
        info: ModelCallInfo,
        start: float,
        out: Responder,
    ) -> None:
        """Retries used up: an infrastructure error; tell the SDK not to retry on top."""
        self.infra_error = exc
        self.ctx.trajectory.record(
            "model_call",
            content=str(exc),
            ok=False,
            args=with_info(info, {"error": "model_unavailable", "status": exc.status}),
            latency_s=time.monotonic() - start,
        )
        headers = [NO_RETRY]
        if exc.retry_after:
            headers.append(("retry-after", exc.retry_after))
        status = exc.status if exc.status and exc.status >= 429 else 502
        await out.json(status, api.error_body(str(exc), "model_unavailable"), headers)

    def _budget_reason(self) -> tuple[str, str]:
        return f"harness budget exceeded: {self.exceeded}", "budget_exceeded"

    def _budget_error(self, api: WireAPI) -> ErrorBody:
        return api.error_body(*self._budget_reason())


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
    listener: Listener[SocketStream]
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
            try:  # calls in flight are spent upstream: let them finish and be metered
                await proxy.admission.drain()
                proxy.record_cut(proxy.admission.in_flight)
            finally:
                tg.cancel_scope.cancel()
    if error is not None:
        raise error


__all__ = ["MeteringProxy", "metering_proxy"]
