"""Budgets are caps on what reaches the upstream, not checks after the fact.

A program that fires 20 calls at once under a 20-token budget gets at most one call past
the budget to the upstream (each call's cost is known before the next is admitted); steps
are reserved when a call is admitted; calls still in flight when the trial stops are
metered (after a grace period, recorded with unknown usage). Against the scripted server.
"""

from __future__ import annotations

import shlex
import sys

import anyio
import httpx
import pytest

from harness.agents.command import CommandAgent
from harness.config.models import Budgets
from harness.errors import BudgetExceeded
from harness.models import admission
from harness.models.proxy import metering_proxy
from tests.fakes.openai_server import FakeOpenAI, completion, slow

from .conftest import make_ctx

pytestmark = pytest.mark.anyio

PARALLEL = """
import json, os, sys, threading, urllib.request, urllib.error
def one(i):
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": str(i)}]}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                 "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=30).read()
    except urllib.error.HTTPError:
        pass
threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
[t.start() for t in threads]
[t.join() for t in threads]
print("done")
"""


def program() -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(PARALLEL)}"


async def fire_and_hang_up(proxy, server: FakeOpenAI) -> None:
    """A program's call that is killed once the call has reached the upstream."""
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            async with httpx.AsyncClient() as http:
                await http.post(
                    proxy.base_url + "/chat/completions",
                    json={"model": "m", "messages": []},
                    headers={"Authorization": f"Bearer {proxy.token}"},
                )

        tg.start_soon(call)
        while not server.model_requests():
            await anyio.sleep(0.02)
        tg.cancel_scope.cancel()  # the program is killed mid-call


def calls(ctx) -> list:
    return [e for e in ctx.trajectory.events if e.kind == "model_call"]


@pytest.mark.parametrize(
    ("budgets", "reached"),
    [
        (Budgets(max_tokens=20), 2),  # 15 tokens a call: the second breaks the budget
        (Budgets(max_cost_usd=0.00002), 2),  # $0.000015 a call at $1/$1 per million
        (Budgets(max_steps=5), 5),  # steps reserved at admission: exactly five
    ],
)
async def test_twenty_parallel_calls_under_a_budget(settings, sandbox, budgets, reached) -> None:
    with FakeOpenAI(default=completion("ok", usage=(10, 5))) as server:
        settings = settings.model_copy(update={"base_url": server.base_url})
        settings = settings.model_copy(
            update={"price": settings.price.model_copy(update={"input": 1.0, "output": 1.0})}
        )
        ctx = make_ctx(sandbox, agent="command", model=settings, budgets=budgets)
        ctx.arm.params["command"] = program()
        with pytest.raises(BudgetExceeded):
            await CommandAgent().run(ctx)
        upstream = len(server.model_requests())
    assert upstream == reached  # before: all 20 reached the upstream (300 tokens spent)
    metered = [e for e in calls(ctx) if e.tokens_in]
    assert len(metered) == upstream  # every call that reached the upstream is recorded
    assert ctx.usage.tokens_total == 15 * upstream
    assert ctx.usage.model_calls == upstream


@pytest.mark.parametrize(("grace", "metered"), [(10.0, True), (0.2, False)])
async def test_a_call_in_flight_when_the_trial_stops_is_still_metered(
    settings, sandbox, monkeypatch, grace, metered
) -> None:
    """The program is killed while its call (1 s at the upstream) is in flight: leaving the
    proxy (the trial's end) waits for it and meters it; past the grace it is recorded with
    unknown usage, so the trial's tokens and cost are unknown, never short."""
    monkeypatch.setattr(admission, "GRACE_S", grace)
    with FakeOpenAI() as server:
        server.push(slow(1.0, completion("late", usage=(40, 4))))
        settings = settings.model_copy(update={"base_url": server.base_url, "timeout_s": 10})
        ctx = make_ctx(sandbox, agent="command", model=settings)
        async with metering_proxy(ctx, settings) as proxy, anyio.create_task_group() as tg:
            tg.start_soon(fire_and_hang_up, proxy, server)
    (event,) = calls(ctx)
    if metered:
        assert (event.tokens_in, event.tokens_out) == (40, 4)
        assert ctx.usage.tokens_total == 44
    else:
        assert event.args["error"] == "cut_by_trial_end" and event.args["usage_reported"] is False
        assert ctx.usage.recorded_tokens() == (None, None, None)
        assert ctx.usage.cost_usd is None
