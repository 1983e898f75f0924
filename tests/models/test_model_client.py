"""The chat client against a real HTTP server: usage, retries, faults, pricing."""

from __future__ import annotations

import time

import pytest

from harness.config.models import ModelSettings, Price
from harness.errors import ModelUnavailable, is_retryable
from harness.models import ChatClient, ModelRequestRejected, ModelUsage, cost, lookup_price
from harness.models.pricing import price_for
from tests.fakes.openai_server import (
    FakeOpenAI,
    call,
    completion,
    error,
    malformed,
    rate_limited,
    server_error,
    slow,
    truncated,
)

from .conftest import API_KEY, KEY_ENV

pytestmark = pytest.mark.anyio


async def test_chat_parses_usage_and_tool_calls(fake_openai: FakeOpenAI, settings) -> None:
    fake_openai.push(
        completion(
            tool_calls=[call("kv_get", {"key": "color"}, id="c1")], usage=(120, 7), cached=20
        )
    )
    client = ChatClient(settings)
    resp = await client.chat([{"role": "user", "content": "hi"}], tools=[], seed=7)
    assert resp.usage == ModelUsage(input_tokens=120, cached_tokens=20, output_tokens=7)
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("c1", "kv_get", '{"key": "color"}')
    ]
    assert resp.attempts == 1
    (req,) = fake_openai.chat_requests()
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert req.json["model"] == "fake-model"
    assert req.json["seed"] == 7
    assert API_KEY not in repr(client)


async def test_settings_are_sent(fake_openai: FakeOpenAI, api_key: str) -> None:
    s = ModelSettings(
        name="m1",
        base_url=fake_openai.base_url,
        api_key_env=KEY_ENV,
        temperature=0.3,
        max_tokens=50,
        extra={"top_p": 0.9},
    )
    fake_openai.push(completion("ok"))
    await ChatClient(s).chat([{"role": "user", "content": "x"}])
    body = fake_openai.chat_requests()[0].json
    assert (body["temperature"], body["max_tokens"], body["top_p"]) == (0.3, 50, 0.9)
    assert "tools" not in body


async def test_no_api_key_env_sends_no_authorization(fake_openai: FakeOpenAI) -> None:
    s = ModelSettings(name="local", base_url=fake_openai.base_url, api_key_env=None)
    fake_openai.push(completion("ok"))
    await ChatClient(s).chat([{"role": "user", "content": "x"}])
    assert "authorization" not in fake_openai.chat_requests()[0].headers


async def test_transient_faults_are_retried(fake_openai: FakeOpenAI, settings) -> None:
    settings = settings.model_copy(update={"timeout_s": 0.5, "max_retries": 5})
    fake_openai.push(
        rate_limited("0.3"),
        server_error(500),
        slow(1.5),
        malformed(),
        truncated(),
        completion("finally", usage=(10, 2)),
    )
    start = time.monotonic()
    resp = await ChatClient(settings).chat([{"role": "user", "content": "x"}])
    assert resp.content == "finally"
    assert resp.attempts == 6
    assert len(fake_openai.chat_requests()) == 6
    # Retry-After 0.3 honoured + one client timeout of 0.5 s.
    assert time.monotonic() - start >= 0.8


@pytest.mark.parametrize(
    "fault",
    [lambda: server_error(503), lambda: rate_limited("0"), malformed, truncated],
    ids=["503", "429", "malformed", "truncated"],
)
async def test_persistent_faults_raise_model_unavailable(
    fake_openai: FakeOpenAI, settings, fault
) -> None:
    fake_openai.default = fault()
    with pytest.raises(ModelUnavailable) as info:
        await ChatClient(settings).chat([{"role": "user", "content": "x"}])
    assert is_retryable(info.value)
    assert len(fake_openai.chat_requests()) == settings.max_retries + 1
    assert API_KEY not in str(info.value)
    assert info.value.__cause__ is None


async def test_persistent_timeout_raises_model_unavailable(fake_openai: FakeOpenAI, settings):
    settings = settings.model_copy(update={"timeout_s": 0.2, "max_retries": 1})
    fake_openai.default = slow(1.0)
    with pytest.raises(ModelUnavailable, match="timed out"):
        await ChatClient(settings).chat([{"role": "user", "content": "x"}])
    assert len(fake_openai.chat_requests()) == 2


async def test_connection_refused_raises_model_unavailable(api_key: str) -> None:
    with FakeOpenAI() as server:
        url = server.base_url  # a port that is closed once the server stops
    s = ModelSettings(name="m", base_url=url, api_key_env=KEY_ENV, max_retries=1)
    with pytest.raises(ModelUnavailable, match="connection error"):
        await ChatClient(s).chat([{"role": "user", "content": "x"}])


async def test_client_errors_are_not_retried(fake_openai: FakeOpenAI, settings) -> None:
    """401/403: the harness's key; 404: the suite's URL or model name (the harness built the
    request): both stop the run; 400/409/413/422: the request the agent's transcript made."""
    from harness.errors import ModelKeyRejected, ModelNotFound

    fake_openai.push(error(401, f"bad key {API_KEY}"))
    with pytest.raises(ModelKeyRejected) as info:
        await ChatClient(settings).chat([{"role": "user", "content": "x"}])
    assert API_KEY not in str(info.value) and "***" in str(info.value)
    assert info.value.config and info.value.cause == "HTTP 401"
    assert info.value.endpoint == settings.base_url
    fake_openai.push(error(404, "no such model"))
    with pytest.raises(ModelNotFound) as other:
        await ChatClient(settings).chat([{"role": "user", "content": "x"}])
    assert other.value.config and other.value.cause == "HTTP 404"
    for status in (400, 409, 413, 422):
        fake_openai.push(error(status, "context length exceeded"))
        with pytest.raises(ModelRequestRejected):
            await ChatClient(settings).chat([{"role": "user", "content": "x"}])
    assert len(fake_openai.chat_requests()) == 6


async def test_retry_logs_never_show_the_key(fake_openai: FakeOpenAI, settings, caplog) -> None:
    # the retry logger's own level too: an in-process `harness ... -q` earlier in the session
    # set it to ERROR
    caplog.set_level("DEBUG")
    caplog.set_level("DEBUG", logger="harness.retries")
    fake_openai.push(server_error(), server_error(), completion("ok"))
    await ChatClient(settings).chat([{"role": "user", "content": "x"}])
    shown = [r for r in caplog.records if r.name == "harness.retries" and r.levelname == "WARNING"]
    assert len(shown) == 1 and "HTTP 500" in shown[0].getMessage()  # one line per cause
    assert "retrying" in caplog.text
    assert API_KEY not in caplog.text


def test_missing_key_env_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.errors import ConfigError

    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(ConfigError, match="NOPE_KEY"):
        ChatClient(ModelSettings(name="m", api_key_env="NOPE_KEY"))


# ------------------------------------------------------------------------------ pricing
def test_cost_uses_cached_rate_and_unknown_is_none() -> None:
    usage = ModelUsage(input_tokens=1_000_000, cached_tokens=400_000, output_tokens=500_000)
    price = Price(input=2.0, cached_input=0.5, output=8.0)
    assert cost(usage, price) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.5 * 8.0)
    assert cost(usage, Price(input=2.0, output=8.0)) == pytest.approx(2.0 + 4.0)
    assert cost(usage, None) is None
    assert cost(ModelUsage(reported=False), price) is None


def test_price_lookup_and_override() -> None:
    assert lookup_price("gpt-4o-mini-2024-07-18") == lookup_price("gpt-4o-mini")
    assert lookup_price("openai/gpt-4.1-mini") == lookup_price("gpt-4.1-mini")
    assert lookup_price("gpt-4o") != lookup_price("gpt-4o-mini")
    assert lookup_price("my-local-llama") is None
    own = Price(input=9.0, output=9.0)
    assert price_for(ModelSettings(name="gpt-4o", price=own)) == own
    assert price_for(ModelSettings(name="my-local-llama")) is None


def test_settings_expand_environment_variables(monkeypatch: pytest.MonkeyPatch, api_key) -> None:
    from harness.errors import ConfigError
    from harness.models import expand_env

    s = ModelSettings(
        name="${HARNESS_MODEL:-gpt-4o-mini}",
        base_url="${TEST_BASE:-http://localhost:1}/v1",
        api_key_env=KEY_ENV,
    )
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    monkeypatch.delenv("TEST_BASE", raising=False)
    assert (expand_env(s).name, expand_env(s).base_url) == ("gpt-4o-mini", "http://localhost:1/v1")
    monkeypatch.setenv("HARNESS_MODEL", "gpt-4.1")
    assert ChatClient(s).settings.name == "gpt-4.1"
    with pytest.raises(ConfigError, match="UNSET_VAR"):
        expand_env(s.model_copy(update={"name": "${UNSET_VAR}"}))
    with pytest.raises(ConfigError) as info:
        expand_env(s.model_copy(update={"base_url": f"${{{KEY_ENV}}}"}))
    assert API_KEY not in str(info.value)
