"""Agents, registered by name; an arm may also name one as 'module:Class'."""

from __future__ import annotations

from harness.agents.base import Agent, AgentContext, AgentResult, ToolResult, Usage
from harness.registry import Registry

AGENTS: Registry[Agent] = Registry(
    "agent",
    Agent,
    {
        "noop": "harness.agents.noop:NoopAgent",
        "oracle": "harness.agents.oracle:OracleAgent",
        "simulated": "harness.agents.simulated:SimulatedAgent",
        "llm": "harness.agents.llm:LLMAgent",
        "command": "harness.agents.command:CommandAgent",
        "claude-code": "harness.agents.cli_agents:ClaudeCodeAgent",
        "codex": "harness.agents.cli_agents:CodexAgent",
    },
    hint="subclass harness.agents.Agent and define `async def run(self, ctx)` returning "
    "AgentResult (see docs/agents.md, 'Writing an agent')",
)


def agent_class(name: str) -> type[Agent]:
    """The agent class registered as ``name`` (or given as 'module:Class')."""
    return AGENTS.load(name)


__all__ = ["AGENTS", "Agent", "AgentContext", "AgentResult", "ToolResult", "Usage", "agent_class"]
