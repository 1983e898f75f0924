"""Agents, registered by name; an arm may also name one as 'module:Class'."""

from __future__ import annotations

import functools
import importlib

from harness.agents.base import Agent, AgentContext, AgentResult, ToolResult, Usage

AGENTS: dict[str, str] = {
    "noop": "harness.agents.noop:NoopAgent",
    "oracle": "harness.agents.oracle:OracleAgent",
    "simulated": "harness.agents.simulated:SimulatedAgent",
    "llm": "harness.agents.llm:LLMAgent",
    "command": "harness.agents.command:CommandAgent",
    "claude-code": "harness.agents.cli_agents:ClaudeCodeAgent",
    "codex": "harness.agents.cli_agents:CodexAgent",
}


@functools.cache
def agent_class(name: str) -> type[Agent]:
    target = AGENTS.get(name, name)
    if ":" not in target:
        raise KeyError(f"unknown agent '{name}' (known: {', '.join(sorted(AGENTS))})")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


__all__ = ["AGENTS", "Agent", "AgentContext", "AgentResult", "ToolResult", "Usage", "agent_class"]
