"""A scripted model solves a retail task through the llm agent, in a full trial."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.models.pricing import DEFAULT_PRICES
from harness.plan import Job, trial_seed
from harness.resolve import load as load_suite
from harness.run_context import run_context
from harness.sandbox.local import LocalProvider
from harness.trial import run_trial
from tests.fakes.openai_server import FakeOpenAI, call, completion

from .conftest import API_KEY

pytestmark = pytest.mark.anyio

SUITE = Path(__file__).resolve().parents[2] / "tasks" / "retail" / "llm-suite.yaml"
TASK = "retail/address-w1014"


async def test_scripted_model_solves_a_retail_task(fake_openai: FakeOpenAI, monkeypatch, caplog):
    if not SUITE.is_file():
        pytest.skip("the retail suite is not there")
    monkeypatch.setenv("HARNESS_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    resolved = load_suite(SUITE, {"sandbox": "local"})
    task = resolved.task(TASK).task
    assert task.solution is not None
    script = [
        completion(tool_calls=[call(a.tool, a.args)], usage=(1000, 50), cached=200)
        for a in task.solution.actions
    ]
    script.append(completion(f"{task.solution.answer}\nCONFIDENCE: 0.95", usage=(1000, 50)))
    fake_openai.push(*script)

    provider = LocalProvider()
    env = resolved.environments["retail"]
    image_ids = await provider.prepare([env])
    rc = run_context("test-run", resolved, provider, image_ids, backoff_s=0.01)
    job = Job(arm="llm", task_id=TASK, trial_index=0, seed=trial_seed(resolved.suite.seed, TASK, 0))
    record = await run_trial(job, rc)

    row = record.trial if isinstance(record.trial, dict) else record.trial.model_dump()
    trial = SimpleNamespace(**row)
    events = [
        SimpleNamespace(**(e if isinstance(e, dict) else e.model_dump())) for e in record.events
    ]
    assert trial.status == "passed", trial.reason
    n = len(script)
    assert (trial.tokens_in, trial.tokens_cached, trial.tokens_out) == (
        n * 1000,
        (n - 1) * 200,
        n * 50,
    )
    p = DEFAULT_PRICES["gpt-4o-mini"]
    expected = (
        (n * 1000 - (n - 1) * 200) * p.input + (n - 1) * 200 * p.cached_input + n * 50 * p.output
    ) / 1e6
    assert trial.cost_usd == pytest.approx(expected)
    assert trial.confidence == pytest.approx(0.95)
    assert [e.tool for e in events if e.kind == "tool_call"] == [
        a.tool for a in task.solution.actions
    ]
    first = fake_openai.chat_requests()[0].json
    assert first["model"] == "gpt-4o-mini" and first["temperature"] == 0.0
    assert "customer-service agent" in first["messages"][0]["content"]  # the policy
    assert {t["function"]["name"] for t in first["tools"]} >= {"find_user", "modify_address"}
    assert API_KEY not in caplog.text
    assert all(API_KEY not in (e.content or "") for e in events)
