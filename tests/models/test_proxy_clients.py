"""The metering proxy driven by the official SDKs, as a real agent program would use them.

Every case runs a real proxy on loopback in front of the scripted upstream
(``tests/fakes/openai_server.py``), calls it with the ``openai`` or ``anthropic`` SDK (sync
in a worker thread, async in the test's loop; plain and streamed; with tool calls) and checks
that the SDK parsed the reply and the trial was charged exactly the script's usage × price,
with one ``model_call`` event per call. The error cases check what an SDK sees and how many
requests reached the upstream (one per proxy try, never multiplied by the SDK's retries).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from harness.config.models import ModelSettings, Price
from harness.errors import BudgetExceeded, ConfigError
from harness.models.proxy import metering_proxy
from tests.fakes.openai_server import (
    FakeOpenAI,
    Turn,
    cut_stream,
    error,
    malformed,
    rate_limited,
    server_error,
)

from .conftest import KEY_ENV, make_ctx

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

pytestmark = pytest.mark.anyio

PRICE = Price(input=1.0, cached_input=0.5, output=2.0, cache_write=1.25)
TOOL = {
    "name": "kv_set",
    "description": "Set a key.",
    "parameters": {
        "type": "object",
        "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
        "required": ["key", "value"],
    },
}
ARGS = {"key": "color", "value": "blue"}
TURN = Turn(
    "Setting it now.", tool_calls=[("kv_set", ARGS)], usage=(1000, 50), cached=400, cache_write=100
)


def expected_cost(turn: Turn, api: str) -> float:
    i, o = turn.usage or (0, 0)
    write = turn.cache_write if api == "messages" else 0
    return ((i - turn.cached - write) * 1.0 + turn.cached * 0.5 + write * 1.25 + o * 2.0) / 1e6


def model_settings(server: FakeOpenAI, api: str = "openai", retries: int = 2) -> ModelSettings:
    return ModelSettings(
        name="fake-model",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        timeout_s=5.0,
        max_retries=retries,
        price=PRICE,
        api=api,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------------ callers
def _openai_tools(api: str) -> list[dict[str, Any]]:
    if api == "chat":
        return [{"type": "function", "function": TOOL}]
    return [{"type": "function", **TOOL}]


def _anthropic_tools() -> list[dict[str, Any]]:
    return [
        {
            "name": TOOL["name"],
            "description": TOOL["description"],
            "input_schema": TOOL["parameters"],
        }
    ]


def openai_sync(base: str, token: str, api: str, stream: bool) -> tuple[str, dict]:
    """(text, tool arguments) as the SDK parsed them."""
    client = openai.OpenAI(base_url=base + "/v1", api_key=token)
    if api == "chat":
        if not stream:
            r = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], tools=_openai_tools(api)
            )
            m = r.choices[0].message
            return m.content or "", json.loads(m.tool_calls[0].function.arguments)
        with client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "hi"}], tools=_openai_tools(api)
        ) as s:
            m = s.get_final_completion().choices[0].message
        return m.content or "", json.loads(m.tool_calls[0].function.arguments)
    if not stream:
        r = client.responses.create(model="m", input="hi", tools=_openai_tools(api))
    else:
        with client.responses.stream(model="m", input="hi", tools=_openai_tools(api)) as s:
            r = s.get_final_response()
    calls = [o for o in r.output if o.type == "function_call"]
    return r.output_text, json.loads(calls[0].arguments)


async def openai_async(base: str, token: str, api: str, stream: bool) -> tuple[str, dict]:
    async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=token) as client:
        return await _openai_async(client, api, stream)


async def _openai_async(client: Any, api: str, stream: bool) -> tuple[str, dict]:
    if api == "chat-text":  # no tools: just the text
        msgs = [{"role": "user", "content": "hi"}]
        if not stream:
            r = await client.chat.completions.create(model="m", messages=msgs)
            return r.choices[0].message.content or "", {}
        chunks = await client.chat.completions.create(model="m", messages=msgs, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices]), {}
    msgs = [{"role": "user", "content": "hi"}]
    if api == "chat":
        if not stream:
            r = await client.chat.completions.create(
                model="m", messages=msgs, tools=_openai_tools(api)
            )
            m = r.choices[0].message
            return m.content or "", json.loads(m.tool_calls[0].function.arguments)
        text, args = [], {}
        chunks = await client.chat.completions.create(
            model="m", messages=msgs, tools=_openai_tools(api), stream=True
        )
        raw_args = ""
        async for chunk in chunks:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
                for call in choice.delta.tool_calls or []:
                    raw_args += call.function.arguments or ""
        args = json.loads(raw_args)
        return "".join(text), args
    if not stream:
        r = await client.responses.create(model="m", input="hi", tools=_openai_tools(api))
        calls = [o for o in r.output if o.type == "function_call"]
        return r.output_text, json.loads(calls[0].arguments)
    final = None
    events = await client.responses.create(
        model="m", input="hi", tools=_openai_tools(api), stream=True
    )
    async for event in events:
        if event.type == "response.completed":
            final = event.response
    assert final is not None
    calls = [o for o in final.output if o.type == "function_call"]
    return final.output_text, json.loads(calls[0].arguments)


def anthropic_sync(base: str, token: str, api: str, stream: bool) -> tuple[str, dict]:
    client = anthropic.Anthropic(base_url=base, api_key=token)
    kwargs: dict[str, Any] = dict(
        model="m",
        max_tokens=100,
        messages=[{"role": "user", "content": "hi"}],
        tools=_anthropic_tools(),
    )
    if stream:
        with client.messages.stream(**kwargs) as s:
            m = s.get_final_message()
    else:
        m = client.messages.create(**kwargs)
    return _anthropic_parts(m)


async def anthropic_async(base: str, token: str, api: str, stream: bool) -> tuple[str, dict]:
    kwargs: dict[str, Any] = dict(
        model="m",
        max_tokens=100,
        messages=[{"role": "user", "content": "hi"}],
        tools=_anthropic_tools(),
    )
    async with anthropic.AsyncAnthropic(base_url=base, auth_token=token) as client:
        if stream:
            async with client.messages.stream(**kwargs) as s:
                m = await s.get_final_message()
        else:
            m = await client.messages.create(**kwargs)
    return _anthropic_parts(m)


def _anthropic_parts(m: Any) -> tuple[str, dict]:
    text = "".join(b.text for b in m.content if b.type == "text")
    uses = [b for b in m.content if b.type == "tool_use"]
    return text, uses[0].input


CLIENTS = {
    "openai-sync": (openai_sync, False),
    "openai-async": (openai_async, True),
    "anthropic-sync": (anthropic_sync, False),
    "anthropic-async": (anthropic_async, True),
}
CASES = [
    (client, api, stream)
    for client, apis in (
        ("openai-sync", ("chat", "responses")),
        ("openai-async", ("chat", "responses")),
        ("anthropic-sync", ("messages",)),
        ("anthropic-async", ("messages",)),
    )
    for api in apis
    for stream in (False, True)
]


async def call_client(name: str, origin: str, token: str, api: str, stream: bool) -> Any:
    fn, is_async = CLIENTS[name]
    if is_async:
        return await fn(origin, token, api, stream)
    return await anyio.to_thread.run_sync(lambda: fn(origin, token, api, stream))


# ------------------------------------------------------------------------------ metering
@pytest.mark.parametrize(("client", "api", "stream"), CASES)
async def test_sdk_calls_are_metered(api_key, sandbox, client, api, stream) -> None:
    provider = "anthropic" if api == "messages" else "openai"
    with FakeOpenAI() as server:
        server.push(TURN, TURN)
        settings = model_settings(server, provider)
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            text, args = await call_client(client, proxy.origin, proxy.token, api, stream)
            text2, _ = await call_client(client, proxy.origin, proxy.token, api, stream)
        assert (text, args, text2) == (TURN.text, ARGS, TURN.text)
        reqs = server.model_requests()
        assert len(reqs) == 2 and all(r.json["model"] == "fake-model" for r in reqs)
        if provider == "anthropic":
            assert all(r.headers["x-api-key"] == api_key for r in reqs)
            assert all("authorization" not in r.headers for r in reqs)
        else:
            assert all(r.headers["authorization"] == f"Bearer {api_key}" for r in reqs)
        if api == "chat" and stream:
            assert all(r.json["stream_options"]["include_usage"] for r in reqs)
    u = ctx.usage
    i, o = TURN.usage or (0, 0)
    assert (u.tokens_in, u.tokens_cached, u.tokens_out) == (2 * i, 2 * TURN.cached, 2 * o)
    assert u.cost_usd == pytest.approx(2 * expected_cost(TURN, api), rel=1e-9)
    assert (u.model_calls, u.steps) == (2, 2)
    events = [e for e in ctx.trajectory.events if e.kind == "model_call"]
    assert len(events) == 2
    assert all(e.ok is not False and e.args["stream"] is stream for e in events)
    assert all(e.args["api"] == api and e.args["tool_calls"] == ["kv_set"] for e in events)
    assert events[0].content == TURN.text


async def test_stream_passes_through_unchanged(api_key, sandbox) -> None:
    """The program receives the upstream's events byte for byte, as they are produced."""
    import httpx

    turn = Turn("one two three four", usage=(10, 4))
    with FakeOpenAI() as server:
        settings = model_settings(server)
        ctx = make_ctx(sandbox, agent="command", model=settings)
        server.push(turn)
        async with metering_proxy(ctx, settings) as proxy, httpx.AsyncClient() as http:
            body = {
                "model": "m",
                "messages": [],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            headers = {"Authorization": f"Bearer {proxy.token}"}
            async with http.stream(
                "POST", f"{proxy.base_url}/chat/completions", json=body, headers=headers
            ) as r:
                received = b"".join([chunk async for chunk in r.aiter_raw()])
        from tests.fakes.llm_wire import chat_events

        sent = server.requests[-1]
        assert sent.json["stream_options"] == {"include_usage": True}
    # Same shape as what the server produced (ids and timestamps differ per rendering).
    lines = received.decode().split("\n\n")
    assert lines[-2] == "data: [DONE]" and json.loads(lines[-3][6:])["usage"]["prompt_tokens"] == 10
    assert len(lines) - 1 == len(chat_events(turn, True))
    assert ctx.usage.tokens_total == 14


async def test_usage_chunk_the_program_did_not_ask_for_is_dropped(api_key, sandbox) -> None:
    with FakeOpenAI() as server:
        server.push(Turn("hello", usage=(7, 3)))
        settings = model_settings(server)
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            client = openai.AsyncOpenAI(base_url=proxy.base_url, api_key=proxy.token)
            async with client:
                chunks = [
                    c
                    async for c in await client.chat.completions.create(
                        model="m", messages=[], stream=True
                    )
                ]
    assert all(c.usage is None for c in chunks) and all(c.choices for c in chunks)
    assert (ctx.usage.tokens_in, ctx.usage.tokens_out) == (7, 3)


@pytest.mark.parametrize(
    ("client", "api"),
    [("openai-sync", "chat"), ("openai-async", "responses"), ("anthropic-sync", "messages")],
)
async def test_budget_ends_the_stream_with_an_error_the_sdk_raises(
    api_key, sandbox, client, api
) -> None:
    from harness.config.models import Budgets

    provider = "anthropic" if api == "messages" else "openai"
    with FakeOpenAI() as server:
        server.default = TURN
        settings = model_settings(server, provider)
        ctx = make_ctx(sandbox, agent="command", model=settings, budgets=Budgets(max_tokens=1500))
        async with metering_proxy(ctx, settings) as proxy:
            await call_client(client, proxy.origin, proxy.token, api, True)
            with pytest.raises((openai.APIError, anthropic.APIError)) as info:
                await call_client(client, proxy.origin, proxy.token, api, True)
            assert "budget" in str(info.value)
            with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as later:
                await call_client(client, proxy.origin, proxy.token, api, True)
            assert later.value.status_code == 402
        assert len(server.model_requests()) == 2  # the refused third call never left the proxy
    assert isinstance(proxy.exceeded, BudgetExceeded) and proxy.exceeded.reason == "max_tokens"
    assert proxy.infra_error is None
    assert len([e for e in ctx.trajectory.events if e.kind == "model_call"]) == 2


# ------------------------------------------------------------------------------ faults
FAULTS = {
    "500": (lambda: server_error(500), 500, True),
    "429": (lambda: rate_limited("0.05"), 429, True),
    "malformed": (malformed, 502, True),
    "400": (lambda: error(400, "context length exceeded"), 400, False),
}


@pytest.mark.parametrize(
    "client", ["openai-sync", "openai-async", "anthropic-sync", "anthropic-async"]
)
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_faults_reach_the_sdk_once(api_key, sandbox, client, fault) -> None:
    make, status, infra = FAULTS[fault]
    api = "messages" if client.startswith("anthropic") else "chat"
    with FakeOpenAI() as server:
        server.default = make()
        settings = model_settings(server, "anthropic" if api == "messages" else "openai")
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as info:
                await call_client(client, proxy.origin, proxy.token, api, False)
        tries = settings.max_retries + 1 if infra else 1
        assert len(server.model_requests()) == tries  # the SDK's own retries never fired
    response = info.value.response
    assert response.status_code == status
    if infra:
        assert response.headers["x-should-retry"] == "false"
        assert isinstance(proxy.infra_error, Exception)
    else:
        assert "context length exceeded" in str(info.value) and proxy.infra_error is None
    if fault == "429":
        assert response.headers["retry-after"] == "0.05"


@pytest.mark.parametrize(
    ("client", "api"),
    [("openai-sync", "chat"), ("openai-async", "responses"), ("anthropic-async", "messages")],
)
async def test_cut_stream_is_an_infra_error(api_key, sandbox, client, api) -> None:
    with FakeOpenAI() as server:
        server.push(cut_stream(TURN, after=4))
        settings = model_settings(server, "anthropic" if api == "messages" else "openai")
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            with pytest.raises((openai.APIError, anthropic.APIError)) as info:
                await call_client(client, proxy.origin, proxy.token, api, True)
    assert "stream cut" in str(info.value)
    assert proxy.infra_error is not None and proxy.exceeded is None
    events = [e for e in ctx.trajectory.events if e.kind == "model_call"]
    assert len(events) == 1 and events[0].ok is False


async def test_unserved_api_is_a_config_error(api_key, sandbox) -> None:
    with FakeOpenAI() as server:
        settings = model_settings(server, "openai")
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            client = anthropic.AsyncAnthropic(base_url=proxy.origin, api_key=proxy.token)
            oai = openai.AsyncOpenAI(base_url=proxy.base_url, api_key=proxy.token)
            async with client, oai:
                with pytest.raises(anthropic.NotFoundError):
                    await client.messages.create(model="m", max_tokens=5, messages=[])
                with pytest.raises(openai.NotFoundError):
                    await oai.embeddings.create(model="m", input="x")
        assert server.model_requests() == []
    assert isinstance(proxy.config_error, ConfigError)
    assert "messages API" in str(proxy.config_error) and "api: openai" in str(proxy.config_error)


@pytest.mark.parametrize("stream", [False, True])
async def test_no_usage_is_unknown_and_budgets_use_a_stated_estimate(
    api_key, sandbox, stream
) -> None:
    from harness.config.models import Budgets

    quiet = Turn("x" * 400, usage=None)  # ~100 output tokens by the estimate, none reported
    with FakeOpenAI() as server:
        server.default = quiet
        settings = model_settings(server)
        ctx = make_ctx(sandbox, agent="command", model=settings, budgets=Budgets(max_tokens=200))
        async with metering_proxy(ctx, settings) as proxy:
            await call_client("openai-async", proxy.origin, proxy.token, "chat-text", stream)
            with pytest.raises(openai.APIError) as info:
                await call_client("openai-async", proxy.origin, proxy.token, "chat-text", stream)
    assert "estimated at 4 characters per token" in str(info.value)
    assert isinstance(proxy.exceeded, BudgetExceeded) and proxy.exceeded.reason == "max_tokens"
    assert proxy.unmetered_calls == 2
    assert ctx.usage.cost_usd is None  # unknown, never 0
    events = [e for e in ctx.trajectory.events if e.kind == "model_call"]
    assert len(events) == 2
    assert all(e.args["usage_reported"] is False and e.cost_usd is None for e in events)


async def test_a_program_that_hangs_up_mid_stream_still_gets_one_event(api_key, sandbox) -> None:
    import httpx

    from tests.fakes.openai_server import slow_stream

    with FakeOpenAI() as server:
        server.push(slow_stream(Turn("a b c d e f g h", usage=(50, 8), cached=0), 0.05))
        settings = model_settings(server, "anthropic")
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            async with httpx.AsyncClient() as http:
                body = {"model": "m", "max_tokens": 5, "messages": [], "stream": True}
                headers = {"x-api-key": proxy.token}
                url = f"{proxy.origin}/v1/messages"
                async with http.stream("POST", url, json=body, headers=headers) as r:
                    async for _ in r.aiter_raw():
                        break  # the first bytes, then gone
            for _ in range(100):
                if ctx.trajectory.events:
                    break
                await anyio.sleep(0.05)
    (event,) = [e for e in ctx.trajectory.events if e.kind == "model_call"]
    assert event.args["error"] == "program_hung_up"
    assert event.tokens_in == 50  # message_start had reported the input side
