"""Fixtures for the model client, the llm and command agents and the metering proxy.

Everything runs against a real HTTP server on 127.0.0.1 (``tests/fakes/openai_server.py``)
and real local sandboxes (temporary directories, host subprocesses).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.agents.base import AgentContext  # noqa: E402
from harness.config.models import (  # noqa: E402
    Arm,
    Budgets,
    EnvironmentSpec,
    ModelSettings,
    Price,
    StateSpec,
    Task,
    ToolSpec,
    UserScript,
)
from harness.models import client as client_module  # noqa: E402
from harness.sandbox.base import Environment, SandboxRequest  # noqa: E402
from harness.sandbox.local import LocalProvider, LocalSandbox  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

KEY_ENV = "HARNESS_TEST_MODEL_KEY"
API_KEY = "sk-test-9f3b7c1e-TOP-SECRET-never-leak"
PRICE = Price(input=1.0, cached_input=0.5, output=2.0)
KV_DIR = Path(__file__).parent / "kvenv"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "DEFAULT_BACKOFF_BASE_S", 0.01)


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    return API_KEY


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def settings(fake_openai: FakeOpenAI, api_key: str) -> ModelSettings:
    return ModelSettings(
        name="fake-model",
        base_url=fake_openai.base_url,
        api_key_env=KEY_ENV,
        timeout_s=2.0,
        max_retries=3,
        price=PRICE,
    )


def kv_environment() -> Environment:
    spec = EnvironmentSpec(
        name="kv",
        files="files",
        policy="policy.md",
        state=StateSpec(kind="command", command="python3 tools/state.py"),
        tools=[
            ToolSpec(
                name="kv_get",
                description="Read the value of a key.",
                parameters={
                    "type": "object",
                    "properties": {"key": {"type": "string"}},
                    "required": ["key"],
                },
                command="python3 tools/kv_get.py",
            ),
            ToolSpec(
                name="kv_set",
                description="Set a key to a value.",
                parameters={
                    "type": "object",
                    "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
                    "required": ["key", "value"],
                },
                command="python3 tools/kv_set.py",
            ),
        ],
    )
    return Environment(spec=spec, root=KV_DIR)


@pytest.fixture
async def sandbox() -> AsyncIterator[LocalSandbox]:
    provider = LocalProvider()
    box = await provider.create(SandboxRequest(environment=kv_environment(), image_id=None))
    try:
        yield box
    finally:
        await box.destroy()


def make_ctx(
    sandbox: LocalSandbox,
    *,
    agent: str = "llm",
    model: ModelSettings | None = None,
    params: dict[str, Any] | None = None,
    budgets: Budgets | None = None,
    instruction: str = "Set the color to blue and tell me what it was before.",
    user: UserScript | None = None,
    seed: int = 1234,
) -> AgentContext:
    task = Task(
        id="kv-color",
        instruction=instruction,
        environment="kv",
        graders=[{"type": "state_diff"}],
        user=user,
    )
    from harness.agents.user import make_user

    arm = Arm(name="arm", agent=agent, params=params or {}, model=model)
    return AgentContext(
        task_id=task.id,
        arm=arm,
        instruction=instruction,
        sandbox=sandbox,
        environment=kv_environment(),
        seed=seed,
        budgets=budgets or Budgets(),
        user=make_user(
            user, instruction=instruction, seed=seed, max_turns=arm.params.get("max_user_turns")
        ),
        user_opens=user is not None and user.goal is not None,
    )
