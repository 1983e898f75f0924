"""An upstream that echoes the harness's key: the program never receives it (plain bodies,
streamed events, error bodies) and nothing stored holds it (trajectory content, errors)."""

from __future__ import annotations

import httpx
import pytest

from harness.config.models import ModelSettings
from harness.models.proxy import metering_proxy
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest, Turn, error

from .conftest import API_KEY, KEY_ENV, make_ctx

pytestmark = pytest.mark.anyio


def echo(req: RecordedRequest) -> Turn:
    """A reply that quotes the key the request carried, in one piece."""
    key = req.headers.get("x-api-key") or req.headers["authorization"].removeprefix("Bearer ")
    return Turn(f"you sent {key}, thanks", chunk_chars=10_000)


CASES = [
    ("openai", "/v1/chat/completions", {"model": "m", "messages": []}),
    ("openai", "/v1/responses", {"model": "m", "input": "hi"}),
    ("anthropic", "/v1/messages", {"model": "m", "max_tokens": 9, "messages": []}),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("api", "path", "body"), CASES)
async def test_an_echoed_key_is_redacted(api_key, sandbox, api, path, body, stream) -> None:
    with FakeOpenAI() as server:
        server.push(echo, error(400, f"Invalid key {API_KEY} for this request"))
        settings = ModelSettings(
            name="fake-model", base_url=server.base_url, api_key_env=KEY_ENV, api=api
        )  # type: ignore[arg-type]
        ctx = make_ctx(sandbox, agent="command")
        async with metering_proxy(ctx, settings) as proxy, httpx.AsyncClient() as http:
            headers = {"Authorization": f"Bearer {proxy.token}", "x-api-key": proxy.token}
            url = proxy.origin + path
            reply = await http.post(url, json={**body, "stream": stream}, headers=headers)
            refused = await http.post(url, json=body, headers=headers)
        assert server.model_requests()[0].headers.get("authorization", "").endswith(API_KEY) or (
            server.model_requests()[0].headers.get("x-api-key") == API_KEY
        )
    assert reply.status_code == 200 and refused.status_code == 400
    received = reply.content + refused.content
    assert API_KEY.encode() not in received
    assert b"you sent ***, thanks" in received and b"Invalid key ***" in received
    stored = " ".join(str(e.model_dump()) for e in ctx.trajectory.events)
    assert API_KEY not in stored and "***" in stored
