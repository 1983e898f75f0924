"""The metering proxy driven by litellm (OpenAI and Anthropic providers), plain and streamed.

litellm is what many agent programs use to reach a model; it wraps the official SDKs with
its own parsing and retries. Same checks as ``test_proxy_clients.py``: the reply parsed, the
trial charged exactly the script's usage × price, one upstream request per proxy try.
"""

from __future__ import annotations

import json
import os

import pytest

from harness.models.proxy import metering_proxy
from tests.fakes.openai_server import FakeOpenAI, cut_stream, error, rate_limited, server_error

from .conftest import make_ctx
from .test_proxy_clients import ARGS, TOOL, TURN, expected_cost, model_settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch it from the network
litellm = pytest.importorskip("litellm")

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::UserWarning")]


def _kwargs(proxy, provider: str, stream: bool) -> dict:
    prefix = "anthropic" if provider == "anthropic" else "openai"
    base = proxy.origin if provider == "anthropic" else proxy.base_url
    return dict(
        model=f"{prefix}/fake-model",
        api_base=base,
        api_key=proxy.token,
        messages=[{"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": TOOL}],
        max_tokens=100,
        stream=stream,
    )


async def _call(proxy, provider: str, stream: bool) -> tuple[str, dict]:
    response = await litellm.acompletion(**_kwargs(proxy, provider, stream))
    if not stream:
        message = response.choices[0].message
        return message.content or "", json.loads(message.tool_calls[0].function.arguments)
    chunks = [chunk async for chunk in response]
    message = litellm.stream_chunk_builder(chunks).choices[0].message
    return message.content or "", json.loads(message.tool_calls[0].function.arguments)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
async def test_litellm_calls_are_metered(api_key, sandbox, provider, stream) -> None:
    api = "messages" if provider == "anthropic" else "chat"
    with FakeOpenAI() as server:
        server.push(TURN)
        settings = model_settings(server, provider)
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            text, args = await _call(proxy, provider, stream)
        assert len(server.model_requests()) == 1
    assert (text, args) == (TURN.text, ARGS)
    i, o = TURN.usage or (0, 0)
    u = ctx.usage
    assert (u.tokens_in, u.tokens_cached, u.tokens_out, u.model_calls) == (i, TURN.cached, o, 1)
    assert u.cost_usd == pytest.approx(expected_cost(TURN, api), rel=1e-9)


@pytest.mark.parametrize(
    ("fault", "status", "tries"),
    [("500", 500, 3), ("429", 429, 3), ("400", 400, 1), ("cut", None, 1)],
)
async def test_litellm_sees_faults_once(api_key, sandbox, fault, status, tries) -> None:
    script = {
        "500": server_error(500),
        "429": rate_limited("0.05"),
        "400": error(400, "context length exceeded"),
        "cut": cut_stream(TURN, after=3),
    }[fault]
    with FakeOpenAI(default=script) as server:
        settings = model_settings(server, "openai", retries=2)
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy:
            with pytest.raises(Exception) as info:  # noqa: PT011 (litellm's own error types)
                await _call(proxy, "openai", fault == "cut")
        assert len(server.model_requests()) == tries
    if status is not None:
        assert getattr(info.value, "status_code", None) == status
    assert (proxy.infra_error is not None) == (fault != "400")
