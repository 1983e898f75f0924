"""The llm agent: a scripted model through a real HTTP server, tools in a local sandbox."""

from __future__ import annotations

import json

import pytest

from harness.agents import agent_class
from harness.agents.llm import LLMAgent, split_confidence
from harness.config.models import Budgets, ModelSettings, UserScript
from harness.errors import BudgetExceeded, ModelUnavailable, classify
from harness.sandbox.base import snapshot_state
from tests.fakes.openai_server import FakeOpenAI, call, completion, rate_limited, server_error

from .conftest import API_KEY, KEY_ENV, PRICE, kv_environment, make_ctx

pytestmark = pytest.mark.anyio

CALL_COST = (80 * PRICE.input + 20 * PRICE.cached_input + 10 * PRICE.output) / 1e6


def solve_script() -> list:
    return [
        completion(tool_calls=[call("kv_get", {"key": "color"})], usage=(100, 10), cached=20),
        completion(
            tool_calls=[call("kv_set", {"key": "color", "value": "blue"})],
            usage=(100, 10),
            cached=20,
        ),
        completion(
            "The color was red; it is blue now.\nCONFIDENCE: 0.9", usage=(100, 10), cached=20
        ),
    ]


async def test_scripted_model_solves_the_task(fake_openai: FakeOpenAI, settings, sandbox) -> None:
    assert agent_class("llm") is LLMAgent
    fake_openai.push(*solve_script())
    ctx = make_ctx(sandbox, model=settings)
    result = await LLMAgent().run(ctx)

    assert result.answer == "The color was red; it is blue now."
    assert result.confidence == pytest.approx(0.9)
    state = await snapshot_state(sandbox, kv_environment())
    assert state == {"color": "blue", "size": "M"}

    events = ctx.trajectory.events
    assert [(e.kind, e.tool) for e in events] == [
        ("model_call", None),
        ("tool_call", "kv_get"),
        ("model_call", None),
        ("tool_call", "kv_set"),
        ("model_call", None),
        ("message", None),
    ]
    assert events[1].content.strip() == "red"
    calls = [e for e in events if e.kind == "model_call"]
    assert all((e.tokens_in, e.tokens_cached, e.tokens_out) == (100, 20, 10) for e in calls)
    assert all(e.cost_usd == pytest.approx(CALL_COST) for e in calls)
    u = ctx.usage
    assert (u.tokens_in, u.tokens_cached, u.tokens_out) == (300, 60, 30)
    assert u.cost_usd == pytest.approx(3 * CALL_COST)
    assert (u.model_calls, u.steps, u.malformed_tool_calls) == (3, 3, 0)

    first, second, _ = (r.json for r in fake_openai.chat_requests())
    system = first["messages"][0]
    assert system["role"] == "system" and "Read a key before changing it" in system["content"]
    assert first["messages"][1] == {"role": "user", "content": ctx.instruction}
    assert [t["function"]["name"] for t in first["tools"]] == ["kv_get", "kv_set"]
    assert first["seed"] == ctx.seed
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["content"].strip() == "red"
    assert second["messages"][-2]["tool_calls"][0]["id"] == tool_msg["tool_call_id"]


async def test_transient_fault_inside_a_trial_is_retried(fake_openai, settings, sandbox):
    script = solve_script()
    fake_openai.push(script[0], rate_limited("0.05"), server_error(), *script[1:])
    ctx = make_ctx(sandbox, model=settings)
    result = await LLMAgent().run(ctx)
    assert result.answer
    attempts = [e.args["attempts"] for e in ctx.trajectory.events if e.kind == "model_call"]
    assert attempts == [1, 3, 1]


async def test_persistent_fault_is_an_infra_error(fake_openai, settings, sandbox) -> None:
    fake_openai.default = server_error(502)
    with pytest.raises(ModelUnavailable) as info:
        await LLMAgent().run(make_ctx(sandbox, model=settings))
    assert classify(info.value) == "infra_error"


async def test_model_that_never_stops_hits_max_steps(fake_openai, settings, sandbox) -> None:
    fake_openai.default = completion(tool_calls=[call("kv_get", {"key": "size"})])
    ctx = make_ctx(sandbox, model=settings, budgets=Budgets(max_steps=3))
    with pytest.raises(BudgetExceeded) as info:
        await LLMAgent().run(ctx)
    assert info.value.reason == "max_steps"
    assert classify(info.value) == "failed"
    assert len(ctx.trajectory.tool_calls()) == 3


async def test_token_budget(fake_openai, settings, sandbox) -> None:
    fake_openai.default = completion(tool_calls=[call("kv_get", {"key": "size"})], usage=(100, 10))
    ctx = make_ctx(sandbox, model=settings, budgets=Budgets(max_steps=None, max_tokens=250))
    with pytest.raises(BudgetExceeded) as info:
        await LLMAgent().run(ctx)
    assert info.value.reason == "max_tokens"
    assert ctx.usage.tokens_total == 330 and ctx.usage.model_calls == 3
    assert ctx.trajectory.events[-1].kind == "model_call"  # the breaking call is recorded


async def test_cost_budget(fake_openai, settings, sandbox) -> None:
    fake_openai.default = completion(tool_calls=[call("kv_get", {"key": "size"})], usage=(100, 10))
    ctx = make_ctx(sandbox, model=settings, budgets=Budgets(max_steps=None, max_cost_usd=0.0002))
    with pytest.raises(BudgetExceeded) as info:
        await LLMAgent().run(ctx)
    assert info.value.reason == "max_cost_usd"
    assert ctx.usage.model_calls == 2  # 2 × $0.00012 > $0.0002


async def test_max_model_calls_param(fake_openai, settings, sandbox) -> None:
    fake_openai.default = completion(tool_calls=[call("kv_get", {"key": "size"})])
    ctx = make_ctx(sandbox, model=settings, params={"max_model_calls": 2})
    with pytest.raises(BudgetExceeded, match="max_model_calls"):
        await LLMAgent().run(ctx)


async def test_unknown_price_gives_unknown_cost(fake_openai, api_key, sandbox) -> None:
    s = ModelSettings(name="my-local-llama", base_url=fake_openai.base_url, api_key_env=KEY_ENV)
    fake_openai.push(completion("done"))
    ctx = make_ctx(sandbox, model=s)
    result = await LLMAgent().run(ctx)
    assert ctx.usage.cost_usd is None and ctx.usage.tokens_in == 100
    assert ctx.trajectory.events[0].cost_usd is None
    assert result.info["price_known"] is False


async def test_malformed_tool_calls_are_fed_back(fake_openai, settings, sandbox) -> None:
    fake_openai.push(
        completion(
            tool_calls=[
                call("kv_get", '{"key": "col', id="bad_json"),
                call("no_such_tool", {"x": 1}, id="unknown"),
                call("kv_get", "[1, 2]", id="not_object"),
                call("no_such_tool", "[1, 2]", id="unknown_not_object"),
            ]
        ),
        completion("I could not read it."),
    )
    ctx = make_ctx(sandbox, model=settings)
    result = await LLMAgent().run(ctx)
    assert result.answer == "I could not read it."
    assert ctx.usage.malformed_tool_calls == 4
    tools = ctx.trajectory.tool_calls()
    assert [e.ok for e in tools] == [False, False, False, False]
    assert tools[3].args == {}  # not an object: kept out of the event's args
    fed = {
        m["tool_call_id"]: m["content"]
        for m in fake_openai.chat_requests()[1].json["messages"]
        if m["role"] == "tool"
    }
    assert "not valid JSON" in fed["bad_json"]
    assert "unknown tool 'no_such_tool'" in fed["unknown"]
    assert "JSON object" in fed["not_object"]
    assert "unknown tool 'no_such_tool'" in fed["unknown_not_object"]


def test_split_confidence() -> None:
    assert split_confidence("Paris\nCONFIDENCE: 0.75") == ("Paris", 0.75)
    assert split_confidence("Paris\n**Confidence:** 80%") == ("Paris", 0.8)
    assert split_confidence("Paris\nconfidence = 90") == ("Paris", 0.9)
    assert split_confidence("Paris") == ("Paris", None)
    assert split_confidence("Paris\nCONFIDENCE: 400") == ("Paris", None)
    assert split_confidence(None) == (None, None)


async def test_confidence_is_requested_when_asked(fake_openai, settings, sandbox) -> None:
    fake_openai.push(completion("42\nCONFIDENCE: 0.3"))
    ctx = make_ctx(sandbox, model=settings, params={"confidence": True})
    result = await LLMAgent().run(ctx)
    assert result.confidence == pytest.approx(0.3)
    assert "CONFIDENCE" in fake_openai.chat_requests()[0].json["messages"][0]["content"]


# ------------------------------------------------------------------------------ conversations
async def test_scripted_user_conversation(fake_openai, settings, sandbox) -> None:
    fake_openai.push(
        completion("Which key should I change?"),
        completion(tool_calls=[call("kv_set", {"key": "color", "value": "green"})]),
        completion("Done: color is green."),
    )
    user = UserScript(turns=["The color, to green please.", "Thanks! ###STOP###"])
    ctx = make_ctx(sandbox, model=settings, user=user, instruction="Please change a setting.")
    result = await LLMAgent().run(ctx)
    assert result.answer == "Done: color is green."
    assert result.info["ended_by"] == "user_stop"
    kinds = [(e.kind, e.content) for e in ctx.trajectory.events if e.kind in ("user", "message")]
    assert kinds == [
        ("user", "Please change a setting."),
        ("message", "Which key should I change?"),
        ("user", "The color, to green please."),
        ("message", "Done: color is green."),
        ("user", "Thanks!"),
    ]
    last = fake_openai.chat_requests()[-1].json["messages"]
    assert {"role": "user", "content": "The color, to green please."} in last
    assert (await snapshot_state(sandbox, kv_environment()))["color"] == "green"


async def test_scripted_user_runs_out_of_turns(fake_openai, settings, sandbox) -> None:
    fake_openai.push(completion("Hello?"), completion("Bye."))
    ctx = make_ctx(sandbox, model=settings, user=UserScript(turns=["Nothing, really."]))
    result = await LLMAgent().run(ctx)
    assert result.answer == "Bye."
    assert result.info["ended_by"] == "user_stop"


async def test_model_backed_user_gets_the_seed(fake_openai, settings, sandbox, api_key) -> None:
    with FakeOpenAI() as user_server:
        user_model = ModelSettings(
            name="user-model",
            base_url=user_server.base_url,
            api_key_env=KEY_ENV,
            temperature=0.7,
        )
        user_server.push(completion("Order 42, please cancel it."), completion("###STOP###"))
        fake_openai.push(completion("Which order?"), completion("Order 42 is cancelled."))
        user = UserScript(model=user_model, persona="A busy person.")
        ctx = make_ctx(sandbox, model=settings, user=user, instruction="Cancel my order.", seed=99)
        result = await LLMAgent().run(ctx)
        assert result.answer == "Order 42 is cancelled."
        reqs = [r.json for r in user_server.chat_requests()]
        assert [r["seed"] for r in reqs] == [99, 99]
        assert reqs[0]["temperature"] == 0.7
        assert "A busy person." in reqs[0]["messages"][0]["content"]
        assert reqs[0]["messages"][-1] == {"role": "user", "content": "Which order?"}
        user_events = [e for e in ctx.trajectory.events if e.kind == "user"]
        assert [e.content for e in user_events] == [
            "Cancel my order.",
            "Order 42, please cancel it.",
            "###STOP###",
        ]
        assert user_events[1].args["seed"] == 99
        # The user's tokens are not the agent's.
        assert ctx.usage.model_calls == 2 and ctx.usage.tokens_in == 200


# ------------------------------------------------------------------------------ secrets
async def test_api_key_never_leaks(fake_openai, settings, sandbox, caplog) -> None:
    caplog.set_level("DEBUG")
    script = solve_script()
    fake_openai.push(server_error(), *script)
    ctx = make_ctx(sandbox, model=settings)
    await LLMAgent().run(ctx)
    env = await ctx.run_command("env")
    assert KEY_ENV not in env.output and API_KEY not in env.output
    dump = json.dumps([e.model_dump() for e in ctx.trajectory.events])
    assert API_KEY not in dump
    assert API_KEY not in caplog.text
    assert all(r.headers.get("authorization") == f"Bearer {API_KEY}" for r in fake_openai.requests)
