"""The command agent: an external program metered through the loopback proxy."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import httpx
import pytest

from harness.agents import agent_class
from harness.agents.command import CommandAgent
from harness.config.models import Budgets
from harness.errors import AgentFailure, BudgetExceeded, ConfigError, ModelUnavailable, classify
from harness.models.proxy import metering_proxy
from harness.sandbox.base import snapshot_state
from tests.fakes.openai_server import FakeOpenAI, call, completion, server_error

from .conftest import API_KEY, KEY_ENV, PRICE, kv_environment, make_ctx

pytestmark = pytest.mark.anyio

PROGRAM = Path(__file__).parent / "agent_program.py"
CALL_COST = (80 * PRICE.input + 20 * PRICE.cached_input + 10 * PRICE.output) / 1e6


def program(*flags: str) -> str:
    return " ".join(shlex.quote(p) for p in (sys.executable, str(PROGRAM), *flags))


def solve_script() -> list:
    return [
        completion(tool_calls=[call("kv_get", {"key": "color"})], cached=20),
        completion(tool_calls=[call("kv_set", {"key": "color", "value": "blue"})], cached=20),
        completion("It was red.\nCONFIDENCE: 0.7", cached=20),
    ]


@pytest.mark.parametrize("where", ["host", "sandbox"])
async def test_program_is_metered(fake_openai: FakeOpenAI, settings, sandbox, where) -> None:
    assert agent_class("command") is CommandAgent
    fake_openai.push(*solve_script())
    ctx = make_ctx(
        sandbox,
        agent="command",
        model=settings,
        params={"command": program("--answer-file"), "where": where},
    )
    result = await CommandAgent().run(ctx)

    assert result.answer == "It was red."
    assert result.confidence == pytest.approx(0.7)
    assert (await snapshot_state(sandbox, kv_environment()))["color"] == "blue"
    u = ctx.usage
    assert (u.tokens_in, u.tokens_cached, u.tokens_out, u.model_calls) == (300, 60, 30, 3)
    assert u.cost_usd == pytest.approx(3 * CALL_COST)
    assert u.steps == 3

    kinds = [(e.kind, e.tool) for e in ctx.trajectory.events]
    assert kinds == [
        ("model_call", None),
        ("model_call", None),
        ("model_call", None),
        ("command", "agent"),
        ("note", None),
        ("tool_call", "kv_get"),
        ("tool_call", "kv_set"),
        ("message", None),
    ]
    calls = [e for e in ctx.trajectory.events if e.kind == "model_call"]
    assert all(e.cost_usd == pytest.approx(CALL_COST) for e in calls)
    assert calls[0].args["requested_model"] == "program-picked-model"
    reqs = fake_openai.chat_requests()
    assert [r.json["model"] for r in reqs] == ["fake-model"] * 3  # the arm's model
    assert all(r.headers["authorization"] == f"Bearer {API_KEY}" for r in reqs)
    # Nothing of the harness's exchange files is left in the sandbox's working directory.
    assert not any(p.name.startswith(".harness") for p in Path(sandbox.workdir).iterdir())


async def test_answer_is_the_last_stdout_line(fake_openai, settings, sandbox) -> None:
    fake_openai.push(completion("Forty-two."))
    ctx = make_ctx(sandbox, agent="command", model=settings, params={"command": program()})
    result = await CommandAgent().run(ctx)
    assert result.answer == "Forty-two."
    assert ctx.trajectory.events[-1].kind == "message"


@pytest.mark.parametrize(
    ("budgets", "reason"),
    [
        (Budgets(max_tokens=250), "max_tokens"),
        (Budgets(max_cost_usd=0.0002), "max_cost_usd"),
        (Budgets(max_steps=2), "max_steps"),
    ],
)
async def test_budget_is_enforced(fake_openai, settings, sandbox, budgets, reason) -> None:
    fake_openai.default = completion(tool_calls=[call("kv_get", {"key": "size"})])
    ctx = make_ctx(
        sandbox, agent="command", model=settings, budgets=budgets, params={"command": program()}
    )
    with pytest.raises(BudgetExceeded) as info:
        await CommandAgent().run(ctx)
    assert info.value.reason == reason
    assert classify(info.value) == "failed"
    assert len(fake_openai.chat_requests()) <= 3
    assert ctx.usage.model_calls == len(fake_openai.chat_requests())


async def test_upstream_outage_is_an_infra_error(fake_openai, settings, sandbox) -> None:
    fake_openai.default = server_error(503)
    ctx = make_ctx(sandbox, agent="command", model=settings, params={"command": program()})
    with pytest.raises(ModelUnavailable):
        await CommandAgent().run(ctx)
    assert len(fake_openai.chat_requests()) == settings.max_retries + 1


async def test_crash_and_timeout_are_agent_failures(settings, sandbox) -> None:
    ctx = make_ctx(sandbox, agent="command", params={"command": "echo oops >&2; exit 7"})
    with pytest.raises(AgentFailure, match="exit code 7.*oops"):
        await CommandAgent().run(ctx)
    ctx = make_ctx(sandbox, agent="command", params={"command": "sleep 30", "timeout_s": 0.5})
    with pytest.raises(BudgetExceeded, match="timeout"):
        await CommandAgent().run(ctx)


async def test_program_trajectory_is_merged_and_checked(sandbox) -> None:
    lines = [
        {"kind": "tool_call", "tool": "kv_get", "args": {"key": "a"}, "content": "1", "ok": True},
        {"kind": "model_call", "tokens_in": 99999, "content": "self-reported"},
        "not json",
    ]
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    cmd = f"printf '%s\\n' {shlex.quote(text)} > \"$HARNESS_TRAJECTORY\"; echo done"
    ctx = make_ctx(sandbox, agent="command", params={"command": cmd})
    result = await CommandAgent().run(ctx)
    assert result.answer == "done"
    events = ctx.trajectory.events
    assert [e.kind for e in events] == ["command", "note", "tool_call", "note", "note", "message"]
    assert events[3].args == {"program_kind": "model_call"} and events[3].tokens_in == 0
    assert events[4].ok is False
    assert ctx.usage.tokens_in == 0


async def test_proxy_requires_the_trial_token(fake_openai, settings, sandbox) -> None:
    ctx = make_ctx(sandbox, agent="command", model=settings)
    async with metering_proxy(ctx, settings) as proxy, httpx.AsyncClient() as http:
        url = f"{proxy.base_url}/chat/completions"
        body = {"model": "x", "messages": []}
        bad = await http.post(url, json=body, headers={"Authorization": f"Bearer {API_KEY}"})
        assert bad.status_code == 401
        by_key = await http.post(url, json=body, headers={"x-api-key": "harness-trial-nope"})
        assert by_key.status_code == 401
        models = await http.get(
            f"{proxy.base_url}/models", headers={"Authorization": f"Bearer {proxy.token}"}
        )
        assert models.json()["data"][0]["id"] == "fake-model"
    assert fake_openai.chat_requests() == []
    assert API_KEY not in repr(proxy)


async def test_api_key_never_reaches_the_program(fake_openai, settings, sandbox, caplog) -> None:
    caplog.set_level("DEBUG")
    fake_openai.push(completion("ok"), completion("ok"))
    for where in ("host", "sandbox"):
        ctx = make_ctx(
            sandbox,
            agent="command",
            model=settings,
            params={"command": program("--dump-env"), "where": where, "pass_env": ["HOME"]},
        )
        await CommandAgent().run(ctx)
        dumped = json.loads(
            next(
                e for e in ctx.trajectory.events if e.kind == "note" and e.content.startswith("{")
            ).content
        )
        assert KEY_ENV not in dumped and API_KEY not in dumped.values()
        assert dumped["OPENAI_API_KEY"].startswith("harness-trial-")
        assert dumped["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
        everything = json.dumps([e.model_dump() for e in ctx.trajectory.events])
        assert API_KEY not in everything
    assert API_KEY not in caplog.text
    ctx = make_ctx(
        sandbox,
        agent="command",
        model=settings,
        params={"command": "true", "pass_env": [KEY_ENV]},
    )
    with pytest.raises(ConfigError) as info:
        await CommandAgent().run(ctx)
    assert API_KEY not in str(info.value)


async def test_upstream_auth_failure_is_a_key_rejection(fake_openai, settings, sandbox) -> None:
    from harness.errors import ModelKeyRejected
    from tests.fakes.openai_server import error

    fake_openai.push(error(401, f"Incorrect API key provided: {API_KEY}"))
    ctx = make_ctx(sandbox, agent="command", model=settings, params={"command": program()})
    with pytest.raises(ModelKeyRejected) as info:
        await CommandAgent().run(ctx)
    assert info.value.config and info.value.endpoint == settings.base_url
    assert API_KEY not in str(info.value)
    assert all(API_KEY not in (e.content or "") for e in ctx.trajectory.events)


@pytest.mark.parametrize("status", [400, 404, 409, 422])
async def test_a_request_the_upstream_refuses_is_the_agents_failure(
    fake_openai, settings, sandbox, status
) -> None:
    """An unknown previous_response_id, a bad parameter: the program's request caused the
    4xx, which reaches it unchanged; the trial is its failure, never infrastructure."""
    from tests.fakes.openai_server import error

    fake_openai.push(error(status, "Previous response with id 'resp_x' not found."))
    ctx = make_ctx(sandbox, agent="command", model=settings, params={"command": program()})
    with pytest.raises(AgentFailure) as info:
        await CommandAgent().run(ctx)
    assert info.value.reason == "agent_crashed"  # the program's own reaction to the 4xx
    assert f"model error {status}" in str(info.value)
    assert len(fake_openai.model_requests()) == 1  # passed on, never retried
    call = next(e for e in ctx.trajectory.events if e.kind == "model_call")
    assert call.ok is False and call.args["status"] == status


SDK_PROGRAM = """
import os, sys
import {sdk}
from urllib import request
{body}
"""
OPENAI_STREAM = """
client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the harness
stream = client.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}], stream=True)
print("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
"""
ANTHROPIC_CALL = """
req = request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
    data=b'{"model": "x", "max_tokens": 10, "messages": []}',
    headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json"},
)
request.urlopen(req)
"""


def sdk_program(sdk: str, body: str) -> str:
    source = SDK_PROGRAM.format(sdk=sdk, body=body)
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(source)}"


async def test_streaming_sdk_program_is_metered(fake_openai, settings, sandbox) -> None:
    pytest.importorskip("openai")
    from tests.fakes.openai_server import Turn

    fake_openai.push(Turn("Blue it is.", usage=(120, 8), cached=20))
    ctx = make_ctx(
        sandbox,
        agent="command",
        model=settings,
        params={"command": sdk_program("openai", OPENAI_STREAM)},
    )
    result = await CommandAgent().run(ctx)
    assert result.answer == "Blue it is."
    u = ctx.usage
    assert (u.tokens_in, u.tokens_cached, u.tokens_out, u.steps) == (120, 20, 8, 1)
    assert u.cost_usd == pytest.approx((100 * 1.0 + 20 * 0.5 + 8 * 2.0) / 1e6)
    (event,) = [e for e in ctx.trajectory.events if e.kind == "model_call"]
    assert event.args["stream"] is True and event.content == "Blue it is."


async def test_unserved_api_is_a_harness_error(fake_openai, settings, sandbox) -> None:
    """The program speaks Anthropic, the arm's upstream is OpenAI-kind: the suite's fault."""
    ctx = make_ctx(
        sandbox,
        agent="command",
        model=settings,
        params={"command": sdk_program("urllib", ANTHROPIC_CALL)},
    )
    with pytest.raises(ConfigError, match="messages API.*api: openai") as info:
        await CommandAgent().run(ctx)
    assert classify(info.value) == "harness_error"
    assert fake_openai.model_requests() == []


def test_unserved_api_is_named_in_the_run_summary(fake_openai, tmp_path) -> None:
    import yaml

    from tests.conftest import run_cli

    task = {
        "id": "q",
        "instruction": "2+2?",
        "graders": [{"type": "answer_match", "expected": "4"}],
    }
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}))
    model = {"name": "m", "base_url": fake_openai.base_url, "api_key_env": KEY_ENV}
    arm = {
        "name": "wrong-api",
        "agent": "command",
        "params": {"command": sdk_program("urllib", ANTHROPIC_CALL)},
        "model": model,
    }
    suite = {"name": "s", "seed": 1, "trials": 2, "tasks": ["tasks.yaml"], "arms": [arm]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    result = run_cli(
        "run",
        str(tmp_path / "suite.yaml"),
        "--store",
        f"sqlite:///{tmp_path}/s.db",
        "-q",
        env={KEY_ENV: API_KEY},
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert "harness error (2 trial(s)): ConfigError" in result.stderr
    assert "messages API" in result.stderr and "model.api" in result.stderr


async def test_cost_budget_reason_shows_the_excess(sandbox) -> None:
    ctx = make_ctx(sandbox, budgets=Budgets(max_cost_usd=0.0003))
    ctx.charge(cost_usd=0.0003)
    with pytest.raises(BudgetExceeded) as info:
        ctx.charge(cost_usd=0.00000001)
    assert info.value.detail == "$0.00030001 > $0.0003"


def test_no_usage_from_the_upstream_is_unknown_in_store_and_report(fake_openai, tmp_path) -> None:
    """Through `harness run`: the command agent's program calls an upstream that reports no
    usage for two of three trials; those trials' tokens are NULL in the store and unknown in
    `report --json` (means over the one measured trial, with its n), never 0."""
    import sqlite3

    import yaml

    from tests.conftest import run_cli

    fake_openai.push(completion("4", usage=(120, 8)))  # the one trial whose usage is known
    fake_openai.default = completion("4", usage=None)
    task = {
        "id": "q",
        "instruction": "2+2?",
        "graders": [{"type": "answer_match", "expected": "4"}],
    }
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}))
    model = {"name": "m", "base_url": fake_openai.base_url, "api_key_env": KEY_ENV}
    model["price"] = {"input": PRICE.input, "output": PRICE.output}
    arm = {"name": "quiet", "agent": "command", "params": {"command": program()}, "model": model}
    suite = {"name": "s", "seed": 1, "trials": 3, "tasks": ["tasks.yaml"], "arms": [arm]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    db = tmp_path / "s.db"
    env = {KEY_ENV: API_KEY}
    result = run_cli(
        "run", str(tmp_path / "suite.yaml"), "--store", f"sqlite:///{db}", "-q", env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT status, tokens_in, tokens_cached, tokens_out, cost_usd FROM trials"
        ).fetchall()
    cost = (120 * PRICE.input + 8 * PRICE.output) / 1e6
    assert sorted(rows, key=str) == sorted(
        [("passed", 120, 0, 8, pytest.approx(cost))] + [("passed", None, None, None, None)] * 2,
        key=str,
    )
    report = run_cli("report", "--json", "--store", f"sqlite:///{db}")
    assert report.returncode == 0, report.stderr
    usage = json.loads(report.stdout)["arms"]["quiet"]["usage"]
    tokens = usage["tokens"]
    assert (tokens["in"], tokens["cached"], tokens["out"]) == (120, 0, 8)
    assert tokens["per_trial"] == {"in": 120, "cached": 0, "out": 8}
    assert (tokens["trials"], tokens["known_trials"], tokens["unknown_trials"]) == (3, 1, 2)
    assert "2 of 3 trials had no usage reported" in tokens["note"]
    assert usage["cost"]["unknown_trials"] == 2
    assert "2 with no usage reported" in usage["cost"]["note"]
    assert "price" not in usage["cost"]["note"]
