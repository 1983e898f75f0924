"""The sandbox steps of a trial around the agent's turn: provision the agent's sandbox,
set it up and snapshot s0, run a machinery step after the turn (attributing its failure),
and open the grader's sandbox (``harness.grading``). ``harness.trial`` reads them top to
bottom; errors are typed so the retry decision stays a lookup."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from harness import errors, grading
from harness.config.models import Environment, Task
from harness.config.step_grading import graded_in_place
from harness.network import agent_policy, grading_policy, in_place_policy
from harness.sandbox.base import ExecResult, Sandbox, SandboxRequest
from harness.sandbox.workproduct import BadWorkProduct, WorkProduct
from harness.tools.client import ToolServer

if TYPE_CHECKING:
    from harness.run_context import RunContext

T = TypeVar("T")


class TaskSetupError(errors.HarnessError):
    """A setup command of the environment or task failed: the task is broken, not flaky."""


class NoSandbox(Sandbox):
    """Stands in for a sandbox when a task has no environment (answer-only tasks)."""

    id: str = "none"
    image_id: str | None = None
    workdir: str = "."

    async def exec(
        self,
        cmd: str,
        *,
        stdin: str | bytes | None = None,
        timeout: float | None = None,
        user: str | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = 0,
    ) -> ExecResult:
        raise errors.AgentFailure("no_sandbox", "this task has no environment to run commands in")

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        raise errors.AgentFailure("no_sandbox", "this task has no environment")

    async def write_file(self, path: str, data: bytes) -> None:
        raise errors.AgentFailure("no_sandbox", "this task has no environment")

    async def copy_in(self, src: Path, dest: str) -> None:
        raise errors.AgentFailure("no_sandbox", "this task has no environment")

    async def sweep(self) -> int:
        return 0

    async def destroy(self, interrupted: bool = False) -> None:
        return None


async def provision(
    rc: RunContext,
    env: Environment | None,
    task: Task,
    labels: dict[str, str],
    socket_dir: str | None,
    agent: Any,
    how: grading.GradingPlan,
) -> Sandbox:
    """The agent's fresh sandbox from the pinned image (none for answer-only tasks)."""
    if env is None or rc.provider is None:
        remove_dir(socket_dir)
        return NoSandbox()
    if socket_dir is not None:
        os.chmod(socket_dir, 0o755)  # the container's user may enter, never write
    policy = agent_policy(env, task)
    request = SandboxRequest(
        env,
        rc.image_ids.get(env.name),
        labels,
        rc.resolved.suite.limits,
        network=policy.network if task.network or task.internet else None,
        internet=policy.internet,
        socket_dir=socket_dir,
        agent=agent,
        in_place=graded_in_place(task),  # the task, or one of its steps
    )
    try:
        return await rc.provider.create(request)
    except BaseException:
        remove_dir(socket_dir)
        raise


async def grading_sandbox(
    rc: RunContext,
    env: Environment | None,
    task: Task,
    hidden: Path | None,
    labels: dict[str, str],
    agent_sandbox: Sandbox,
    how: grading.GradingPlan,
    product: WorkProduct | None,
    final: Any,
) -> tuple[grading.GraderSandbox, Any]:
    """Where graders that run code run: a fresh sandbox from the same pinned image (or the
    task's grading environment's) with the agent's files copied in (or, for a task graded
    in place, the agent's own); and the command-kind final state, dumped there. Returns
    (the grader's sandbox, final state)."""
    assert env is not None and rc.provider is not None
    if how.in_place:  # on the grading's own network when it gives one
        agent = agent_policy(env, task)
        net = in_place_policy(task, agent)
        box = await grading.install_in_place(agent_sandbox, hidden, net if net != agent else None)
    else:
        genv = grading_environment(rc, env, task)
        policy = grading_policy(genv, task)
        request = SandboxRequest(
            genv,
            rc.image_ids.get(genv.name),
            {**labels, "harness.role": "grading"},
            rc.resolved.suite.limits,
            network=policy.network,
            internet=policy.internet,
            grading=True,
            grader_root=task.grading.root,
        )
        setup = [*genv.spec.setup] if genv is not env else [*env.spec.setup, *task.setup]
        box = await grading.open_grading(rc.provider, request, setup, hidden)
    try:
        if not how.in_place or how.state_kind == "command":
            dumped = await after_agent(
                box, grading.command_state(box, env, how, product), "the state dump"
            )
            final = dumped if how.state_kind == "command" else final
        if product is not None and not how.in_place:
            await after_agent(
                box, grading.import_workdir(box, how, product), "copying the agent's files in"
            )
    except BaseException:
        with anyio.CancelScope(shield=True):
            await box.destroy()
        raise
    return box, final


def grading_environment(rc: RunContext, env: Environment, task: Task) -> Environment:
    """The environment a task's grading sandbox is made from: its ``grading.environment``
    (loaded with the suite), else its own."""
    name = task.grading.environment
    return rc.resolved.environments[name] if name else env


async def after_agent(sandbox: Sandbox, step: Awaitable[T], what: str) -> T:
    """Run a step of the machinery after the agent's turn. What the agent left that cannot
    be read or used is its failure (``broke_environment``). When the sandbox fails the
    step, the agent broke it if the sandbox is still alive (the same step worked before the
    agent ran) or the backend's evidence says the agent ended it; else it is
    infrastructure."""
    try:
        return await step
    except BadWorkProduct as exc:
        raise grading.agent_fault(exc, what) from exc
    except OSError as exc:  # a host-side step (bwrap) on a trial's full disk quota
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise grading.agent_fault(exc, what) from exc  # "No space left on device"
    except errors.SandboxError as exc:
        cause = await sandbox.death_cause()
        if cause is None and not await _alive(sandbox):
            raise
        kind = cause.split(":", 1)[0] if cause else "broke_environment"
        raise errors.AgentFailure(
            kind, f"{what} failed after the agent's turn: {cause or exc}"
        ) from exc


async def _alive(sandbox: Sandbox) -> bool:
    return await sandbox.alive()


def remove_dir(path: str | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


async def setup(
    sandbox: Sandbox, env: Environment, task: Task, how: grading.GradingPlan
) -> tuple[Any, ToolServer | None]:
    """Run the setup commands, start the tool server if any, and snapshot s0 (from the
    server when it serves the state)."""
    for command in [*env.spec.setup, *task.setup]:
        result = await sandbox.exec(command, timeout=300)
        if not result.ok:
            if not await sandbox.alive():
                raise errors.SandboxError(
                    f"sandbox died during setup command {command!r} of task '{task.id}'"
                )
            raise TaskSetupError(
                f"setup command {command!r} of task '{task.id}' failed "
                f"(exit {result.exit_code}): {result.stderr.strip()[-300:]}"
            )
    spec = env.spec.tool_server
    server = await ToolServer.start(sandbox, spec) if spec else None
    if server is not None and spec is not None and spec.state:
        return await server.snapshot(), server
    try:
        return await grading.initial_state(sandbox, env, how), server
    except BadWorkProduct as exc:  # the environment as shipped yields no state
        raise TaskSetupError(f"task '{task.id}': {exc}") from exc
