"""One attempt of a ``module:Class`` agent: its jail's template, its metering proxy, its
cgroup (``confine``), its process, then the turn (``host.ChildTurn``); everything it set up
ends with it."""

from __future__ import annotations

import shutil
from contextlib import AsyncExitStack

import anyio

from harness import errors
from harness.agent_process import jail
from harness.agent_process.confine import Confinement
from harness.agent_process.host import ChildTurn
from harness.agents.base import AgentContext, AgentResult
from harness.config.models import Limits


async def run_in_child(
    target: str, view: jail.JailView | None, ctx: AgentContext, limits: Limits | None = None
) -> AgentResult:
    """Run the ``module:Class`` agent ``target`` on ``ctx`` in a process of its own: in the
    jail ``view`` (None: a plain child process) under ``limits`` (``confine``); its model
    calls go through a metering proxy (jailed: on a unix socket of the trial's own)."""
    async with AsyncExitStack() as stack:
        template = None if view is None else await anyio.to_thread.run_sync(jail.template, view)
        socket_name = None
        proxy = None
        if ctx.model is not None:
            from harness.models.proxy import metering_proxy

            unix_path = None
            if template is not None:
                socket_dir, socket_name = template.socket_dir()
                stack.callback(shutil.rmtree, socket_dir, True)
                unix_path = f"{socket_dir}/model.sock"
            proxy = await stack.enter_async_context(
                metering_proxy(ctx, ctx.model, unix_path=unix_path)
            )
        confined = None
        if template is not None and limits is not None:
            confined = Confinement(limits)
            stack.callback(confined.close)
        try:
            launched = jail.launch_plain() if template is None else template.spawn(socket_name)
        except jail.JailError as exc:
            raise errors.SandboxError(str(exc)) from None
        launched.on_hello = confined.join if confined else None
        try:
            return await ChildTurn(target, ctx, proxy, launched, template).run(
                ctx.budgets.timeout_s
            )
        except errors.AgentFailure as exc:
            note = confined.memory_note() if confined else None
            if note is None:
                raise
            raise errors.AgentFailure(exc.reason, note) from None


__all__ = ["run_in_child"]
