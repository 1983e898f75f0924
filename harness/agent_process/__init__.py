"""``module:Class`` agents run out of the harness process, one process per trial attempt,
in the agent jail (``jail``: what it may see; ``template``: the process inside that forks
one per trial; ``namespaces``: the calls that isolate it), talking to the harness over a
socket (``attempt``: one attempt's set-up, ``confine``: its limits, ``host``: the harness's side;
``child``: the process; ``wire``: the protocol).

The harness never imports such an agent's module: load-time checks run in such a process
too (``describe``), and the arm's binding holds a ``ChildAgent`` that stands for the class.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from harness.agent_process.jail import JailError, JailView
from harness.agents.base import Agent, AgentContext, AgentResult
from harness.config.models import Limits

DESCRIBE_TIMEOUT_S = 120.0


class ChildAgent(Agent):
    """Stands for a ``module:Class`` agent in the harness: its ``run`` is the child's."""

    name = "child"
    target: ClassVar[str] = ""
    """The ``module:Class`` the child imports."""
    view: ClassVar[JailView | None] = None
    """The jail it runs in (None: a plain child process, only on ``unsafe-local``)."""
    limits: ClassVar[Limits | None] = None
    """The suite's limits, which its jailed process runs under (``confine``)."""

    async def run(self, ctx: AgentContext) -> AgentResult:
        from harness.agent_process.attempt import run_in_child

        return await run_in_child(self.target, self.view, ctx, self.limits)


def runs_in_child(name: str) -> bool:
    """A ``module:Class`` agent outside ``harness.agents`` runs in a child process, and its
    module is never imported by the harness."""
    from harness.agents import AGENTS

    return name not in AGENTS and name.count(":") == 1 and not name.startswith("harness.agents.")


def child_agent(
    target: str, view: JailView | None, limits: Limits | None = None
) -> type[ChildAgent]:
    """A ``ChildAgent`` class for ``target`` in the jail ``view``, under ``limits``."""
    attrs = {"target": target, "name": target, "view": view, "limits": limits}
    return type(f"ChildAgent[{target}]", (ChildAgent,), attrs)


def describe(target: str, params: dict[str, object], view: JailView | None) -> dict[str, Any]:
    """Ask a process in the jail ``view`` about ``target`` (see ``child.describe``);
    blocking. A jail that cannot start is an ``agent_error`` naming why."""
    from harness.agent_process import jail
    from harness.agent_process.host import first_message, started_note
    from harness.agent_process.wire import encode

    try:
        launched = jail.launch_plain() if view is None else jail.template(view).spawn()
    except JailError as exc:
        return {"agent_error": f"'{target}' could not be loaded: {exc}"}
    try:
        try:
            launched.hello_sync(DESCRIBE_TIMEOUT_S)
        except JailError as exc:
            return {"agent_error": f"'{target}' could not be loaded: {started_note(exc, launched)}"}
        message = first_message("describe", launched, agent=target, params=params)
        launched.channel.sendall(encode(message))
        launched.channel.settimeout(DESCRIBE_TIMEOUT_S)
        received = bytearray()
        try:
            while chunk := launched.channel.recv(65536):
                received += chunk
        except TimeoutError:
            return {"agent_error": f"importing '{target}' took over {DESCRIBE_TIMEOUT_S:g}s"}
        for line in reversed(received.splitlines()):
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if isinstance(answer, dict) and answer.get("op") == "described":
                return answer
        tail = launched.stderr_now()[-300:]
        return {"agent_error": f"'{target}' could not be loaded: {tail or 'no answer'}"}
    finally:
        launched.kill()
        launched.wait_sync()
        launched.close()


__all__ = ["ChildAgent", "child_agent", "describe", "runs_in_child"]
