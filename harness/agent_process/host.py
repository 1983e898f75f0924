"""The harness's side of a ``module:Class`` agent's process: start it (in the agent jail,
``jail``), answer its requests through the trial's context, stop it at its time budget,
decide the outcome.

The process is fresh per trial attempt (forked by the jail's template or, on
``unsafe-local`` without bubblewrap, a plain child process). Its environment comes with
the harness's first message and is made from nothing: ``PATH``, locale and time zone,
``HOME`` and ``TMPDIR`` (an empty directory of its own) and, when the arm has a model, the
metering proxy's address and per-trial token (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
...: the variables of the ``command`` agent); in the jail the proxy is a unix socket of
the trial's own, relayed to a port of the process's own loopback. It holds no descriptor
but its channel and stderr, no API key, no store URL. The harness also makes itself
non-dumpable (as ssh-agent does), so even a plain child of its own user cannot read its
memory or environment through ``/proc``.

Whatever the child does, the harness decides from its own evidence: budgets it charged,
the proxy's and the sandbox's errors it saw while serving, the end of the episode it
recorded. At ``timeout_s`` the child stops itself; at ``timeout_s + GRACE_S`` it is killed
with every process it started (jailed: its whole PID namespace), whatever it is doing
(blocked in C, holding its GIL, ignoring cancellation), leaving no thread behind.
"""

from __future__ import annotations

import math
import os
import tarfile
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from harness import errors
from harness.agent_process import jail, wire
from harness.agent_process.sockets import SocketStream
from harness.agents.base import AgentContext, AgentResult, validate_result
from harness.agents.user import STOP, with_turn_info

if TYPE_CHECKING:
    from harness.models.proxy import MeteringProxy

GRACE_S = 2.0
"""Seconds past its time budget before a child that did not stop itself is killed."""
STARTUP_S = 300.0
"""Seconds a child may take to start and import the agent's module (not the agent's time:
its budget starts when the child says it is ready)."""
JAIL_END_S = 2.0
"""Seconds an agent process that ended without a result waits to see its jail gone."""
STDERR_TAIL = 8192
JAIL_HOME = "/tmp"
PROXY_SOCKET = "/run/harness/model.sock"
"""Where a jailed child finds its trial's metering proxy."""


def protect_harness() -> None:
    """Make this process non-dumpable: its ``/proc`` entries (environment, memory, open
    files) are then unreadable to processes without ``CAP_SYS_PTRACE``, children included."""
    import ctypes

    pr_set_dumpable = 4
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)


def first_message(
    op: str, launched: jail.Launched, env: dict[str, str] | None = None, **fields: Any
) -> dict[str, Any]:
    """The harness's first message to a child: what to do, its whole environment (nothing
    of the harness's but the harmless keys) and its import path, both taken before the
    agent's module is imported."""
    home = launched.home or JAIL_HOME
    base = {k: os.environ[k] for k in jail.SAFE_ENV_KEYS if k in os.environ}
    base.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    return {"op": op, "env": {**base, **(env or {})}, "sys_path": jail.search_path(), **fields}


def started_note(exc: Exception, launched: jail.Launched) -> str:
    """Why a child never said hello, with what it wrote to its stderr."""
    tail = launched.stderr_now()[-400:]
    return f"{exc}: {tail}" if tail else str(exc)


class ChildTurn:
    """One agent turn in a child process, served from the trial's context."""

    def __init__(
        self,
        target: str,
        ctx: AgentContext,
        proxy: MeteringProxy | None,
        launched: jail.Launched,
        template: jail.Template | None = None,
    ):
        self.target, self.ctx, self.proxy, self.launched = target, ctx, proxy, launched
        self.template = template
        """The jail the child runs in (None: a plain child)."""
        self.infra: errors.InfraError | None = None
        """The machinery failed under a request (a dead sandbox): the harness saw it."""
        self.config: errors.ConfigError | None = None
        self.budget: errors.BudgetExceeded | None = None
        """A budget the harness charged ran out: the trial is over budget, whatever the
        child does next."""
        self.violation: str | None = None
        self.stderr = bytearray()
        self._lock = anyio.Lock()
        self._channel: SocketStream | None = None
        self._ready = False
        self._deadline = anyio.CancelScope()

    # -- the child's life ------------------------------------------------------------------
    async def run(self, timeout: float | None) -> AgentResult:
        protect_harness()
        launched = self.launched
        outcome: dict[str, Any] | None = None
        timed_out = False
        try:
            self._deadline = anyio.CancelScope(deadline=anyio.current_time() + STARTUP_S)
            with self._deadline:
                try:
                    await launched.hello()
                except jail.JailError as exc:
                    raise errors.SandboxError(started_note(exc, launched)) from None
                self._channel = SocketStream(launched.channel)
                stderr = SocketStream(launched.stderr)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._pump_stderr, stderr)
                    if self.proxy is not None:
                        tg.start_soon(self._stop_when_proxy_says, tg.cancel_scope)
                    await self._send(self._start_message())
                    outcome = await self._serve(self._channel, timeout)
                    tg.cancel_scope.cancel()
            timed_out = self._deadline.cancelled_caught and self._ready
            if self._deadline.cancelled_caught and not self._ready:
                self.violation = f"the agent's process did not start within {STARTUP_S:g}s"
        finally:
            launched.kill()
            with anyio.CancelScope(shield=True):
                await launched.wait()
                launched.close()
        if outcome is None and not timed_out and self.template is not None:
            # A jail killed from outside loses its processes in no set order: wait for
            # the template to be seen gone before the agent is blamed for ending early.
            await anyio.to_thread.run_sync(self.template.gone, JAIL_END_S)
        return self._decide(outcome, timed_out, timeout, launched.returncode)

    def _start_message(self) -> dict[str, Any]:
        ctx, proxy = self.ctx, self.proxy
        arm = ctx.arm.model_dump(mode="json")
        env: dict[str, str] = {}
        extra: dict[str, Any] = {}
        if proxy is not None:
            from harness.agents.command import model_env

            jailed = proxy.unix_path is not None
            origin = wire.PROXY_ORIGIN if jailed else proxy.origin
            env = model_env(origin, proxy.token, proxy.settings)
            if jailed:
                extra["proxy_socket"] = PROXY_SOCKET
            if arm.get("model") is not None:
                anthropic = proxy.settings.api == "anthropic"
                key = "ANTHROPIC_API_KEY" if anthropic else "OPENAI_API_KEY"
                arm["model"].update(base_url=f"{origin}/v1", api_key_env=key)
        environment, sandbox = ctx.environment, ctx.sandbox
        context = {
            "task_id": ctx.task_id,
            "arm": arm,
            "instruction": ctx.instruction,
            "environment": None
            if environment is None
            else {"spec": environment.spec.model_dump(mode="json"), "root": str(environment.root)},
            "seed": ctx.seed,
            "budgets": ctx.budgets.model_dump(mode="json"),
            "variant": None if ctx.variant is None else ctx.variant.model_dump(mode="json"),
            "user": ctx.user is not None,
            "user_opens": ctx.user_opens,
            "policy": ctx.policy,
            "sandbox": {
                "id": sandbox.id,
                "image_id": sandbox.image_id,
                "workdir": sandbox.workdir,
                "agent_path": sandbox.agent_path,
                "isolated": sandbox.isolated,
            },
            "usage": wire.usage_to_wire(ctx.usage),
        }
        return first_message(
            "start", self.launched, env, agent=self.target, context=context, **extra
        )

    async def _pump_stderr(self, stream: Any) -> None:
        with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in stream:
                self.stderr += chunk
                if len(self.stderr) > STDERR_TAIL:
                    del self.stderr[: len(self.stderr) - STDERR_TAIL]

    async def _stop_when_proxy_says(self, scope: anyio.CancelScope) -> None:
        assert self.proxy is not None
        await self.proxy.stop_event.wait()
        scope.cancel()

    async def _send(self, message: dict[str, Any]) -> None:
        assert self._channel is not None
        async with self._lock:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._channel.send(wire.encode(message))

    # -- serving -----------------------------------------------------------------------------
    async def _serve(self, channel: Any, timeout: float | None) -> dict[str, Any] | None:
        """Answer requests until the child's result (returned) or its end (None). The
        deadline moves to ``timeout + GRACE_S`` from the child's ``ready``."""
        lines = BufferedByteReceiveStream(channel)
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    line = await lines.receive_until(b"\n", wire.MAX_LINE)
                    message = wire.json_loads(line)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                    tg.cancel_scope.cancel()
                    return None
                except (anyio.DelimiterNotFound, ValueError) as exc:
                    self.violation = f"the agent's process broke the protocol ({exc})"[:300]
                    tg.cancel_scope.cancel()
                    return None
                op = message.get("op")
                if op == "result":
                    tg.cancel_scope.cancel()
                    return message
                if op == "ready" and not self._ready:
                    self._ready = True
                    limit = math.inf if timeout is None else timeout + GRACE_S
                    self._deadline.deadline = anyio.current_time() + limit
                elif op in wire.NOTICES:
                    self._notice(str(op), message.get("args"))
                else:
                    tg.start_soon(self._answer, message)
        return None  # pragma: no cover - the loop only returns

    def _notice(self, op: str, args: object) -> None:
        try:
            if not isinstance(args, dict):
                raise TypeError("arguments must be an object")
            if op == "say":
                self.ctx.say(_text(args, "text"))
            else:
                self.ctx.charge(**_charge(args))
        except errors.BudgetExceeded as exc:
            self.budget = self.budget or exc
        except (errors.EpisodeEnded, TypeError, ValueError):
            pass  # the child raised the same from its copy; nothing was recorded

    async def _answer(self, message: dict[str, Any]) -> None:
        rid = message.get("id")
        before = len(self.ctx.trajectory.events)
        reply: dict[str, Any]
        try:
            if not isinstance(rid, int) or message.get("op") not in wire.OPS:
                raise ValueError(f"unknown request {str(message.get('op'))[:50]!r}")
            args = message.get("args")
            if not isinstance(args, dict):
                raise TypeError("arguments must be an object")
            reply = {"id": rid, "ok": True, "value": await self._dispatch(message["op"], args)}
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            self._remember(exc)
            reply = {"id": rid, "ok": False, "error": wire.error_to_wire(exc)}
        reply["usage"] = wire.usage_to_wire(self.ctx.usage)
        reply["events"] = [e.model_dump(mode="json") for e in self.ctx.trajectory.events[before:]]
        await self._send(reply)

    def _remember(self, exc: Exception) -> None:
        if isinstance(exc, errors.BudgetExceeded):
            self.budget = self.budget or exc
        elif isinstance(exc, errors.ConfigError):
            self.config = self.config or exc
        elif isinstance(exc, errors.InfraError):
            self.infra = self.infra or exc

    async def _dispatch(self, op: str, args: dict[str, Any]) -> Any:
        ctx = self.ctx
        if op == "call_tool":
            result = await ctx.call_tool(_text(args, "name"), args.get("args"))
            return {"ok": result.ok, "output": result.output, "exit_code": result.exit_code}
        if op == "run_command":
            result = await ctx.run_command(_text(args, "command"), _seconds(args, "timeout"))
            return {"ok": result.ok, "output": result.output, "exit_code": result.exit_code}
        if op == "exec":
            stdin = args.get("stdin")
            done = await ctx.sandbox_exec(
                _text(args, "cmd"),
                stdin=None if stdin is None else wire.from_b64(stdin),
                timeout=_seconds(args, "timeout"),
                user=_text(args, "user", optional=True),
                env=_env(args.get("env")),
            )
            return wire.exec_to_wire(done)
        if op == "read_file":
            return wire.to_b64(await ctx.sandbox_read(_text(args, "path"), _bytes(args, "limit")))
        if op == "write_file":
            await ctx.sandbox_write(_text(args, "path"), wire.from_b64(args.get("data")))
            return None
        if op == "copy_in":
            await self._copy_in(_text(args, "dest"), wire.from_b64(args.get("tar")))
            return None
        return await self._user_turn(op, args)

    async def _copy_in(self, dest: str, packed: bytes) -> None:
        """Unpack the child's tar in a fresh directory (no links out, no special files),
        then copy that into the sandbox."""
        import io

        with tempfile.TemporaryDirectory(prefix="harness-copy-in-") as tmp:
            with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
                tar.extractall(tmp, filter="data")
            await self.ctx.sandbox_copy_in(Path(tmp), dest)

    async def _user_turn(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """A turn of the simulated user, recorded as the harness heard it."""
        user = self.ctx.user
        if user is None:
            raise errors.AgentFailure("no_user", "this task has no simulated user")
        if op == "user_opening":
            turn = await user.opening()
            info = with_turn_info(turn.info, {"turn": 0, "opening": True})
            self.ctx.trajectory.record("user", content=turn.text, args=info)
        else:
            turn = await user.reply(_text(args, "message"))
            if turn.text or turn.stop:
                info = with_turn_info(turn.info, {"stop": turn.stop})
                self.ctx.trajectory.record("user", content=turn.text or STOP, args=info)
        return {"text": turn.text, "stop": turn.stop, "info": dict(turn.info)}

    # -- the outcome ---------------------------------------------------------------------------
    def _decide(
        self,
        outcome: dict[str, Any] | None,
        timed_out: bool,
        timeout: float | None,
        code: int | None,
    ) -> AgentResult:
        """The turn's result from the harness's evidence first, the child's word last."""
        proxy = self.proxy
        for known in (
            proxy.config_error if proxy else None,
            self.config,
            self.budget,
            proxy.exceeded if proxy else None,
            proxy.infra_error if proxy else None,
        ):
            if known is not None:
                raise known
        if timed_out:
            raise errors.BudgetExceeded(
                "timeout",
                f"agent ran over {timeout}s and did not stop within {GRACE_S}s of grace "
                "(blocked, or ignored cancellation); its process was killed",
            )
        if self.ctx.ended_by is not None:
            raise errors.EpisodeEnded(self.ctx.ended_by)
        failed = outcome is None or "error" in outcome
        if failed and self.infra is not None:
            raise self.infra
        if outcome is None and self.template is not None and self.template.gone():
            raise errors.SandboxError(
                "the agent jail ended under the trial (not the agent's doing)"
            )
        if outcome is None:
            exited = "exited" if code is None else f"exited (code {code})"
            why = self.violation or (
                f"the agent's process {exited} before returning{self._stderr_note()}"
            )
            raise errors.AgentFailure("agent_error", why[:500])
        if "error" in outcome:
            raise _child_error(outcome.get("error"), timeout)
        if "invalid" in outcome:
            raise errors.AgentFailure("invalid_agent_result", str(outcome["invalid"])[:500])
        value = outcome.get("value")
        if not isinstance(value, dict):
            raise errors.AgentFailure("invalid_agent_result", "the result is not an object")
        return validate_result(
            AgentResult(
                answer=value.get("answer"),
                confidence=value.get("confidence"),
                info=value.get("info"),  # type: ignore[arg-type]  # checked just now
            )
        )

    def _stderr_note(self) -> str:
        tail = bytes(self.stderr).decode("utf-8", "replace").strip()
        return f"; stderr: {tail[-400:]}" if tail else ""


def _child_error(wire_error: object, timeout: float | None) -> errors.AgentFailure:
    """What the agent's code raised, as the agent's failure (an infrastructure error it
    raised without the harness seeing one is a bid for a retry: its failure too)."""
    err = wire_error if isinstance(wire_error, dict) else {}
    kind, message = str(err.get("type", "")), str(err.get("message", ""))
    if kind == "TimeoutError":
        return errors.BudgetExceeded("timeout", f"agent ran over {timeout}s")
    if kind in ("BudgetExceeded", "AgentFailure"):
        cls = errors.BudgetExceeded if kind == "BudgetExceeded" else errors.AgentFailure
        return cls(str(err.get("reason") or "agent_error")[:100], str(err.get("detail", "")))
    detail = f"{kind}: {message}"[:500]
    return errors.AgentFailure("agent_error", f"the agent's code raised {detail}")


def _text(args: dict[str, Any], name: str, *, optional: bool = False) -> Any:
    value = args.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string")
    return value


def _seconds(args: dict[str, Any], name: str) -> float | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds")
    if not math.isfinite(value):
        return None
    return float(value)


def _bytes(args: dict[str, Any], name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a number of bytes")
    return value


def _env(value: object) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError("env must map names to strings")
    return dict(value)


def _charge(args: dict[str, Any]) -> dict[str, Any]:
    """A charge the child reports: counts only up (never negative, never NaN)."""
    out: dict[str, Any] = {}
    for name in ("tokens_in", "tokens_out", "tokens_cached", "steps"):
        value = args.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number >= 0")
        out[name] = value
    cost = args.get("cost_usd", 0.0)
    if cost is not None and (
        isinstance(cost, bool)
        or not isinstance(cost, int | float)
        or not math.isfinite(cost)
        or cost < 0
    ):
        raise ValueError("cost_usd must be a number >= 0 or None")
    out["cost_usd"] = cost
    out["tokens_known"] = args.get("tokens_known", True) is not False
    return out


__all__ = ["GRACE_S", "ChildTurn"]
