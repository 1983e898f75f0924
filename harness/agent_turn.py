"""The agent's turn of a trial: run it under its time budget, whatever it does, and check
what it returns.

Built-in agents (``harness.agents``) are ours and cooperate with cancellation: they run in
the trial's event loop under ``anyio.fail_after``. Every other agent (``module:Class``) is
treated as an adversary: it runs in a worker thread with an event loop of its own, where its
budget is a cancel scope too; a watchdog in the trial's loop waits at most the budget plus
``GRACE_S``. An agent that blocks its loop (``time.sleep``), swallows cancellation or spins
is then abandoned: the trial fails as ``timeout``, an exception is raised in its thread
(which stops pure-Python loops at once and blocking calls when they return), and the run
goes on at full concurrency. Its sandbox calls are forwarded to the trial's loop, so a
stopped agent's later calls hit a destroyed sandbox, never another trial's.

Anything raised by an adversary's code (``SystemExit`` and ``KeyboardInterrupt`` included)
fails its trial with reason ``agent_error``; infrastructure errors raised by the harness
under it (a dead sandbox, an unreachable model API) stay infrastructure errors. A result
that is not a well-formed ``AgentResult`` fails with ``invalid_agent_result``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import json
import math
import threading
from dataclasses import replace
from typing import Any

import anyio

from harness import errors
from harness.agents.base import AgentContext, AgentResult
from harness.sandbox.base import Sandbox

GRACE_S = 2.0
"""Seconds an agent that ignores its time budget gets before it is abandoned."""


class AgentStopped(BaseException):
    """Raised inside an abandoned agent's thread: its budget and grace are over."""


def is_builtin(cls: type) -> bool:
    """Agents of this package cooperate with cancellation; all others are adversaries."""
    return cls.__module__.startswith("harness.agents.")


def validate_result(obj: Any) -> AgentResult:
    """A checked copy of what an agent returned, or ``AgentFailure('invalid_agent_result')``.

    The copy (``info`` through a JSON round trip) is what the trial keeps: nothing the agent
    does to the object afterwards reaches the store or a grader."""

    def bad(why: str) -> errors.AgentFailure:
        return errors.AgentFailure("invalid_agent_result", why)

    if not isinstance(obj, AgentResult):
        raise bad(f"the agent returned {type(obj).__name__}, not an AgentResult")
    if obj.answer is not None and not isinstance(obj.answer, str):
        raise bad(f"answer is {type(obj.answer).__name__}, not a string or None")
    c = obj.confidence
    if c is not None:
        if isinstance(c, bool) or not isinstance(c, (int, float)):
            raise bad(f"confidence is {type(c).__name__}, not a number or None")
        if not math.isfinite(c) or not 0.0 <= c <= 1.0:
            raise bad(f"confidence {c!r} is not in [0, 1]")
    if not isinstance(obj.info, dict):
        raise bad(f"info is {type(obj.info).__name__}, not a dict")
    try:
        info = json.loads(json.dumps(obj.info, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise bad(f"info is not JSON: {exc}") from None
    return replace(obj, confidence=None if c is None else float(c), info=info)


async def run_agent(agent: Any, ctx: AgentContext) -> AgentResult:
    """Run ``agent`` on ``ctx`` under ``ctx.budgets.timeout_s``; return its checked result.

    Raises ``BudgetExceeded('timeout')``, another ``AgentFailure``, or an ``InfraError``."""
    timeout = ctx.budgets.timeout_s
    if is_builtin(type(agent)):
        try:
            with anyio.fail_after(timeout) if timeout else _no_scope():
                result = await agent.run(ctx)
        except TimeoutError:
            raise errors.BudgetExceeded("timeout", f"agent ran over {timeout}s") from None
        return validate_result(result)
    return validate_result(await _run_isolated(agent, ctx, timeout))


class _no_scope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


async def _run_isolated(agent: Any, ctx: AgentContext, timeout: float | None) -> Any:
    """Run an adversary's ``run`` in a thread with its own loop, behind a watchdog."""
    main_loop = asyncio.get_running_loop()
    done: concurrent.futures.Future = concurrent.futures.Future()
    server = ctx.tool_server
    inner_ctx = replace(
        ctx,
        sandbox=_ForwardingSandbox(ctx.sandbox, main_loop),
        tool_server=None if server is None else _ForwardingServer(server, main_loop),
    )

    async def guarded() -> Any:
        # The agent's loop is the agent's: its errors (an AgentStopped landing in the loop's
        # own code) are not the harness's to print.
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)
        try:
            with anyio.fail_after(timeout) if timeout else _no_scope():
                return await agent.run(inner_ctx)
        finally:
            from harness.models import aclose_clients

            with anyio.CancelScope(shield=True):
                await aclose_clients()

    def thread_main() -> None:
        try:
            outcome: Any = anyio.run(guarded)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: the agent's, not ours
            outcome = _Raised(exc)  # a value, so it never looks like our own cancellation
        _settle(done, outcome)

    thread = threading.Thread(target=thread_main, name=f"agent-{ctx.task_id}", daemon=True)
    thread.start()
    waited = asyncio.wrap_future(done)
    limit = None if timeout is None else timeout + GRACE_S
    outcome: Any = None
    with anyio.move_on_after(limit) as scope:
        outcome = await asyncio.shield(waited)
    if isinstance(outcome, _Raised):  # the agent raised: sort out whose fault it is
        raise _attribute(outcome.exc, timeout) from outcome.exc
    if scope.cancelled_caught:
        _stop_thread(thread)
        raise errors.BudgetExceeded(
            "timeout",
            f"agent ran over {timeout}s and did not stop within {GRACE_S}s of grace "
            "(blocked its event loop or ignored cancellation); abandoned",
        )
    return outcome


class _Raised:
    """What an agent's thread raised, carried as a value."""

    def __init__(self, exc: BaseException):
        self.exc = exc


def _settle(fut: concurrent.futures.Future, value: Any) -> None:
    with contextlib.suppress(concurrent.futures.InvalidStateError):  # nobody waits
        fut.set_result(value)


def _attribute(exc: BaseException, timeout: float | None) -> BaseException:
    """Whose fault is an exception out of an adversary's ``run``?"""
    if isinstance(exc, TimeoutError):
        return errors.BudgetExceeded("timeout", f"agent ran over {timeout}s")
    if isinstance(exc, errors.InfraError) and _raised_by_machinery(exc):
        return exc
    if isinstance(exc, (errors.AgentFailure, errors.EpisodeEnded)):
        return exc
    detail = f"{type(exc).__name__}: {exc}"[:500]
    return errors.AgentFailure("agent_error", f"the agent's code raised {detail}")


_MACHINERY = ("harness.", "graders.", "docker", "httpx", "httpcore", "requests", "urllib3")


def _raised_by_machinery(exc: BaseException) -> bool:
    """Was ``exc`` raised in the harness or a client library (a real infrastructure
    fault under the agent), not by the agent's own code (a bid for a retry, a re-roll)?"""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    module = str(tb.tb_frame.f_globals.get("__name__", ""))
    return module.startswith(_MACHINERY) and not module.startswith("harness.agent_turn")


def _stop_thread(thread: threading.Thread) -> None:
    """Raise ``AgentStopped`` in an abandoned agent's thread (CPython's async exception)."""
    if thread.ident is None or not thread.is_alive():
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread.ident), ctypes.py_object(AgentStopped)
    )


class _ForwardingSandbox(Sandbox):
    """The sandbox as an adversary's thread sees it: each call runs in the trial's loop
    (where the backend's resources live) and returns to the agent's loop."""

    def __init__(self, inner: Any, loop: asyncio.AbstractEventLoop):
        self.__inner = inner
        self.__loop = loop
        self.id = inner.id
        self.image_id = inner.image_id
        self.workdir = inner.workdir
        self.socket_dir = inner.socket_dir
        self.agent_path = inner.agent_path
        self.isolated = inner.isolated

    async def __call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        coro = getattr(self.__inner, name)(*args, **kwargs)
        try:
            fut = asyncio.run_coroutine_threadsafe(coro, self.__loop)
        except RuntimeError as exc:  # the trial's loop is gone: the run is over
            coro.close()
            raise errors.AgentFailure("sandbox_gone", "the trial is over") from exc
        return await asyncio.wrap_future(fut)

    async def exec(self, cmd: str, **kwargs: Any):
        return await self.__call("exec", cmd, **kwargs)

    async def read_file(self, path: str) -> bytes:
        return await self.__call("read_file", path)

    async def write_file(self, path: str, data: bytes) -> None:
        return await self.__call("write_file", path, data)

    async def copy_in(self, src, dest: str) -> None:
        return await self.__call("copy_in", src, dest)

    async def sweep(self) -> int:
        """Agents do not sweep their sandbox; the trial does."""
        return 0

    async def destroy(self, interrupted: bool = False) -> None:
        """Agents do not end their sandbox; the trial does."""
        return None


class _ForwardingServer:
    """The environment's tool server as an adversary's thread sees it (calls forwarded)."""

    def __init__(self, inner: Any, loop: asyncio.AbstractEventLoop):
        self.__inner = inner
        self.__loop = loop
        self.tools = list(inner.tools)

    async def call(self, name: str, args: Any, timeout: float | None) -> Any:
        coro = self.__inner.call(name, args, timeout)
        try:
            fut = asyncio.run_coroutine_threadsafe(coro, self.__loop)
        except RuntimeError as exc:
            coro.close()
            raise errors.AgentFailure("sandbox_gone", "the trial is over") from exc
        return await asyncio.wrap_future(fut)
