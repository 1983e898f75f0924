"""Usage as servers really send it, metered through the proxy from a scripted server of
each shape (``tests/fakes/llm_wire.py``, ``Turn.stream_usage``):

- cumulative usage on every chunk (vLLM, SGLang with continuous usage stats): the last
  figure counts, never the first;
- usage only in a last, usage-only chunk (OpenAI with ``include_usage``);
- Anthropic's split: input in ``message_start``, output in ``message_delta``;
- no usage at all: estimated for budgets and marked, the tokens unknown;

and budgets use the right figure, mid-stream included.
"""

from __future__ import annotations

import json

import httpx
import pytest

from harness.config.models import Budgets, ModelSettings
from harness.errors import BudgetExceeded
from harness.models.proxy import metering_proxy
from harness.models.sse import SSESplitter
from tests.fakes.openai_server import FakeOpenAI, Turn

from .conftest import KEY_ENV, make_ctx

pytestmark = pytest.mark.anyio

GPT4O = {"in": 2.50, "out": 10.00}  # the default table's gpt-4o price, $ per million tokens


def settings_for(server: FakeOpenAI, api: str = "openai", name: str = "gpt-4o") -> ModelSettings:
    return ModelSettings(
        name=name, base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0, api=api
    )  # type: ignore[arg-type]


async def stream(proxy, path: str, body: dict) -> list[dict]:
    """POST a streaming request through the proxy; the JSON events the program received."""
    events = []
    splitter = SSESplitter()
    headers = {"Authorization": f"Bearer {proxy.token}", "x-api-key": proxy.token}
    url = proxy.origin + path
    async with (
        httpx.AsyncClient(timeout=10) as http,
        http.stream("POST", url, json=body, headers=headers) as r,
    ):
        async for chunk in r.aiter_bytes():
            for event in splitter.feed(chunk):
                if event.data.strip() != "[DONE]":
                    events.append(json.loads(event.data))
    return events


def calls(ctx) -> list:
    return [e for e in ctx.trajectory.events if e.kind == "model_call"]


CHAT = {"model": "x", "messages": [{"role": "user", "content": "count"}], "stream": True}


@pytest.mark.parametrize("asked", [False, True])
async def test_cumulative_usage_on_every_chunk_is_metered_from_the_last(
    api_key, sandbox, asked
) -> None:
    """vLLM / SGLang: 10 output tokens over 10 chunks, each chunk carrying the count so far.
    Metered from the first chunk this was 1 token and $0.000235; it is 10 and $0.000325."""
    turn = Turn("0123456789", usage=(90, 10), chunk_chars=1, stream_usage="every")
    with FakeOpenAI() as server:
        server.push(turn)
        ctx = make_ctx(sandbox, agent="command")
        body = {**CHAT, "stream_options": {"include_usage": True}} if asked else CHAT
        async with metering_proxy(ctx, settings_for(server)) as proxy:
            got = await stream(proxy, "/v1/chat/completions", body)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in got if c.get("choices"))
    assert text == "0123456789"
    (event,) = calls(ctx)
    assert (event.tokens_in, event.tokens_out) == (90, 10)
    assert event.cost_usd == pytest.approx(0.000325)
    assert (ctx.usage.tokens_in, ctx.usage.tokens_out) == (90, 10)
    assert ctx.usage.cost_usd == pytest.approx((90 * GPT4O["in"] + 10 * GPT4O["out"]) / 1e6)
    assert all("usage" in c for c in got)  # the server's own per-chunk usage passes through
    assert any(not c["choices"] for c in got) == asked  # the usage-only chunk: when asked


@pytest.mark.parametrize("asked", [False, True])
async def test_usage_only_in_the_last_chunk(api_key, sandbox, asked) -> None:
    """OpenAI: one usage-only chunk at the end, sent because the proxy asks for it; the
    program sees it only when it asked too."""
    with FakeOpenAI() as server:
        server.push(Turn("hello there", usage=(90, 10)))
        ctx = make_ctx(sandbox, agent="command")
        body = {**CHAT, "stream_options": {"include_usage": True}} if asked else CHAT
        async with metering_proxy(ctx, settings_for(server)) as proxy:
            got = await stream(proxy, "/v1/chat/completions", body)
        assert server.model_requests()[0].json["stream_options"] == {"include_usage": True}
    (event,) = calls(ctx)
    assert (event.tokens_in, event.tokens_out) == (90, 10)
    assert event.cost_usd == pytest.approx(0.000325)
    assert [c.get("usage") is not None for c in got].count(True) == (1 if asked else 0)


async def test_anthropic_split_usage(api_key, sandbox) -> None:
    """``message_start`` holds the input side (uncached, cache reads, cache writes) and a
    first output count of 1; ``message_delta`` the final output count."""
    turn = Turn("fine", usage=(1000, 42), cached=400, cache_write=100)
    with FakeOpenAI() as server:
        server.push(turn)
        ctx = make_ctx(sandbox, agent="command")
        settings = settings_for(server, "anthropic", "claude-sonnet-4")
        body = {"model": "x", "max_tokens": 64, "stream": True, "messages": []}
        async with metering_proxy(ctx, settings) as proxy:
            got = await stream(proxy, "/v1/messages", body)
    assert got[0]["message"]["usage"]["output_tokens"] == 1  # what a first-event meter saw
    (event,) = calls(ctx)
    assert (event.tokens_in, event.tokens_cached, event.tokens_out) == (1000, 400, 42)
    price = (500 * 3.00 + 400 * 0.30 + 100 * 3.75 + 42 * 15.00) / 1e6  # claude-sonnet-4
    assert event.cost_usd == pytest.approx(price)


@pytest.mark.parametrize(
    ("api", "path", "body"),
    [
        ("openai", "/v1/chat/completions", CHAT),
        ("openai", "/v1/responses", {"model": "x", "input": "hi", "stream": True}),
        ("anthropic", "/v1/messages", {"model": "x", "max_tokens": 9, "stream": True}),
    ],
)
async def test_no_usage_at_all_is_estimated_and_marked(api_key, sandbox, api, path, body) -> None:
    with FakeOpenAI() as server:
        server.push(Turn("a reply of some length", usage=(90, 10), stream_usage="none"))
        ctx = make_ctx(sandbox, agent="command", budgets=Budgets(max_tokens=10_000))
        async with metering_proxy(ctx, settings_for(server, api)) as proxy:
            await stream(proxy, path, body)
    (event,) = calls(ctx)
    assert event.args["usage_reported"] is False
    assert "characters / 4" in event.args["usage_estimate"]
    assert event.cost_usd is None and not ctx.usage.tokens_known
    assert ctx.usage.recorded_tokens() == (None, None, None)  # unknown, never 0
    assert proxy.admission.estimated_tokens > 0  # the budget still counts it


async def test_a_budget_ends_a_cumulative_stream_on_the_right_figure(api_key, sandbox) -> None:
    """90 prompt tokens and a 100-token budget: the stream ends at the chunk whose count so
    far breaks it, charged that figure (one chunk over at most), not the first chunk's."""
    turn = Turn("0123456789" * 3, usage=(90, 30), chunk_chars=1, stream_usage="every")
    with FakeOpenAI() as server:
        server.push(turn)
        ctx = make_ctx(sandbox, agent="command", budgets=Budgets(max_tokens=100))
        async with metering_proxy(ctx, settings_for(server)) as proxy:
            got = await stream(proxy, "/v1/chat/completions", CHAT)
    assert isinstance(proxy.exceeded, BudgetExceeded)
    assert got[-1]["error"]["code"] == "budget_exceeded"
    (event,) = calls(ctx)
    assert event.tokens_in == 90 and 10 < event.tokens_out <= 12
    assert ctx.usage.tokens_total == 90 + event.tokens_out
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in got if c.get("choices"))
    assert len(text) < 30  # the rest of the reply never reached the program
