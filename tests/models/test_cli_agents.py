"""The ready-made CLI agents' configuration: the API they need, and their pins in the lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.agents import agent_class
from harness.agents.cli_agents import ClaudeCodeAgent, CodexAgent
from harness.errors import ConfigError, classify
from tests.conftest import run_cli

from .conftest import make_ctx

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("agent", "wrong"), [("claude-code", "openai"), ("codex", "anthropic")])
async def test_a_cli_needs_its_api(settings, sandbox, agent, wrong) -> None:
    cls = agent_class(agent)
    assert cls in (ClaudeCodeAgent, CodexAgent)
    ctx = make_ctx(sandbox, agent=agent, model=settings.model_copy(update={"api": wrong}))
    with pytest.raises(ConfigError, match=f"model.api.*set model.api: {cls.api}") as info:
        await cls().run(ctx)
    assert classify(info.value) == "harness_error"
    with pytest.raises(ConfigError, match="needs a model"):
        await cls().run(make_ctx(sandbox, agent=agent))


def test_lock_file_pins_the_cli_versions(tmp_path: Path) -> None:
    task = {
        "id": "q",
        "instruction": "2+2?",
        "graders": [{"type": "answer_match", "expected": "4"}],
    }
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}))
    model = {"name": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}
    suite = {
        "name": "pins",
        "seed": 1,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "sandbox": "local",
        "arms": [
            {"name": "claude", "agent": "claude-code", "model": {**model, "api": "anthropic"}},
            {"name": "codex", "agent": "codex", "params": {"version": "0.170.0"}, "model": model},
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    result = run_cli("lock", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    pins = json.loads(path.with_suffix(".lock.json").read_text())["agents"]
    assert pins == {
        "claude": f"@anthropic-ai/claude-code@{ClaudeCodeAgent.VERSION}",
        "codex": "@openai/codex@0.170.0",
    }
    suite["arms"][1]["params"]["version"] = "0.171.0"
    path.write_text(yaml.safe_dump(suite))
    result = run_cli("run", str(path), "--locked", "--store", f"sqlite:///{tmp_path}/s.db")
    assert result.returncode == 5
    assert "arm 'codex': agent @openai/codex@0.171.0, locked @openai/codex@0.170.0" in (
        result.stdout + result.stderr
    )
