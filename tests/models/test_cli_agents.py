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


@pytest.mark.parametrize("agent", ["claude-code", "codex", "command"])
async def test_an_isolated_sandbox_without_a_place_never_runs_the_program_on_the_host(
    settings, sandbox, agent, monkeypatch
) -> None:
    """A sandbox that is isolated but has neither the CLI nor the proxy's socket (a task
    without environment, a backend that cannot mount them) is a configuration error of the
    harness's making, never a host process nor the agent's failure."""
    monkeypatch.setattr(sandbox, "isolated", True)
    model = (
        settings.model_copy(update={"api": agent_class(agent).api})
        if agent != "command"
        else settings
    )
    params = {"command": "touch ran-on-host", "where": "sandbox"} if agent == "command" else None
    ctx = make_ctx(sandbox, agent=agent, model=model, params=params)
    with pytest.raises(ConfigError, match="sandbox") as info:
        await agent_class(agent)().run(ctx)
    assert classify(info.value) == "harness_error"
    assert not (Path(sandbox.workdir) / "ran-on-host").exists()


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


def test_agents_stage_fills_the_cache_the_trials_read(tmp_path: Path) -> None:
    """`harness agents stage` resolves each pinned package to the cache entry a trial uses;
    a finished entry is reused without npm, and a missing npm is one line, exit 5."""
    import sys

    from harness import exitcodes
    from harness.agents.npm_stage import install_dir

    cache = tmp_path / "cli"
    no_npm = {"HARNESS_CLI_CACHE": str(cache), "PATH": str(Path(sys.executable).parent)}
    missing = run_cli("agents", "stage", "codex", env=no_npm)
    assert missing.returncode == exitcodes.ENVIRONMENT, missing.stdout + missing.stderr
    assert missing.stderr.strip().splitlines() == [
        f"error: installing @openai/codex {CodexAgent.VERSION} needs npm on this machine"
    ]
    want = []
    for cls in (ClaudeCodeAgent, CodexAgent):  # what a finished `npm install` leaves
        package = cls().package(cls.VERSION)
        root = cache / install_dir(package).name
        exe = root / "node_modules" / package.executable
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        (root / ".harness-installed").write_text(package.spec + "\n")
        want.append(f"{cls.name}: {package.label} {package.version} ({package.spec}) at {exe}")
    staged = run_cli("agents", "stage", env=no_npm)
    assert staged.returncode == 0, staged.stdout + staged.stderr
    assert staged.stdout.splitlines() == want
    wrong = run_cli("agents", "stage", "aider", env=no_npm)
    assert (
        wrong.returncode == exitcodes.BAD_CONFIG and "not a ready-made agent: aider" in wrong.stderr
    )


def test_locked_refuses_a_changed_cli_executable_on_bwrap() -> None:
    """On bwrap a CLI is pinned by its npm spec and the SHA-256 of the executable the
    sandboxes bind: other bytes under the same spec are refused, naming both hashes."""
    from harness.sandbox.lock_compare import check_lock

    def entry(sha: str) -> dict:
        pin = {"npm": "@openai/codex@0.171.0-linux-x64", "sha256": sha}
        return {"shell": {"image_id": "bwrap:1", "agents": {"codex-0.171.0": pin}}}

    assert check_lock(entry("aa"), entry("aa")) == []
    assert check_lock(entry("aa"), entry("bb")) == [
        "environment 'shell': agent CLI codex-0.171.0 sha256 is bb but the lock says aa"
    ]
