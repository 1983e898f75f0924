"""``module:Class`` agents run out of the harness process, one child process per trial
attempt (``host``: the harness's side; ``child``: the process; ``wire``: the protocol).

The harness never imports such an agent's module: load-time checks run in a child too
(``describe``), and the arm's binding holds a ``ChildAgent`` that stands for the class.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from typing import Any, ClassVar

from harness.agents.base import Agent, AgentContext, AgentResult

DESCRIBE_TIMEOUT_S = 120.0


class ChildAgent(Agent):
    """Stands for a ``module:Class`` agent in the harness: its ``run`` is the child's."""

    name = "child"
    target: ClassVar[str] = ""
    """The ``module:Class`` the child imports."""

    async def run(self, ctx: AgentContext) -> AgentResult:
        from harness.agent_process.host import run_in_child

        return await run_in_child(self.target, ctx)


def runs_in_child(name: str) -> bool:
    """A ``module:Class`` agent outside ``harness.agents`` runs in a child process, and its
    module is never imported by the harness."""
    from harness.agents import AGENTS

    return name not in AGENTS and name.count(":") == 1 and not name.startswith("harness.agents.")


def child_agent(target: str) -> type[ChildAgent]:
    """A ``ChildAgent`` class for ``target``."""
    return type(f"ChildAgent[{target}]", (ChildAgent,), {"target": target, "name": target})


def describe(target: str, params: dict[str, object]) -> dict[str, Any]:
    """Ask a child process about ``target`` (see ``child.describe``); blocking."""
    from harness.agent_process.host import child_command, child_environment

    with tempfile.TemporaryDirectory(prefix="harness-agent-") as home:
        start = {"op": "describe", "agent": target, "params": params}
        try:
            done = subprocess.run(
                child_command(),
                input=json.dumps(start) + "\n",
                capture_output=True,
                text=True,
                cwd=home,
                env=child_environment(home),
                timeout=DESCRIBE_TIMEOUT_S,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            return {"agent_error": f"importing '{target}' took over {DESCRIBE_TIMEOUT_S:g}s"}
    for line in reversed(done.stdout.splitlines()):
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and answer.get("op") == "described":
            return answer
    tail = done.stderr.strip()[-300:]
    return {"agent_error": f"'{target}' could not be loaded (exit {done.returncode}): {tail}"}


__all__ = ["ChildAgent", "child_agent", "describe", "runs_in_child"]
