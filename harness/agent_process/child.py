"""The process a ``module:Class`` agent runs in: forked by the agent jail's template
(``template``, which calls ``serve``), or, without a jail, started as ``python -c 'from
harness.agent_process.child import main; main()' FD``.

It takes the environment and import path from the harness's first message, imports the
agent, builds its context from the harness's ``start`` message and runs
``agent.run(ctx)`` under the time budget. The context is the same API agents write
against in-process (``harness.agents.base.AgentContext``): its sandbox, tools, commands,
simulated user and charges are requests to the harness over the pipe; its ``trajectory``,
``usage`` and ``budgets`` are copies the harness refreshes with each answer, and changing
them changes nothing the harness keeps. The model is reached through the metering proxy
(``ctx.model`` points at it, with a per-trial token as the key).
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio

from harness import errors
from harness.agent_process import wire
from harness.agents.base import AgentContext, ToolResult, validate_result
from harness.agents.user import UserTurn, UserTurnInfo
from harness.config.models import Arm, Budgets, Environment, EnvironmentSpec, Variant
from harness.sandbox.base import ExecResult, Sandbox
from harness.sandbox.output import OUTPUT_LIMIT
from harness.trajectory import Event


class Channel:
    """The child's end of the pipe: requests with ids, answers matched to them."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader, self._writer = reader, writer
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.ctx: RemoteContext | None = None

    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(wire.encode(message))

    async def request(self, op: str, **args: Any) -> Any:
        self._next += 1
        rid = self._next
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        self.send({"id": rid, "op": op, "args": args})
        await self._writer.drain()
        answer = await future
        if self.ctx is not None:
            self.ctx.refresh(answer)
        if not answer.get("ok"):
            exc = wire.error_from_wire(answer.get("error") or {})  # type: ignore[arg-type]
            if isinstance(exc, errors.EpisodeEnded) and self.ctx is not None:
                self.ctx.ended_by = exc.tool
            raise exc
        return answer.get("value")

    async def read_answers(self) -> None:
        while True:
            line = await self._reader.readline()
            if not line:
                for pending in self._waiting.values():
                    if not pending.done():
                        pending.set_exception(errors.AgentFailure("sandbox_gone", "trial over"))
                return
            answer = wire.json_loads(line)
            rid = answer.get("id")
            future = self._waiting.pop(rid) if rid in self._waiting else None
            if future is not None and not future.done():
                future.set_result(answer)


class RemoteSandbox(Sandbox):
    """The trial's sandbox as the child sees it: every call is made by the harness,
    recorded in the trajectory and charged as a step."""

    def __init__(self, channel: Channel, facts: dict[str, Any]):
        self._channel = channel
        self.id = str(facts["id"])
        self.image_id = facts.get("image_id")
        self.workdir = str(facts["workdir"])
        self.agent_path = facts.get("agent_path")
        self.isolated = bool(facts.get("isolated", True))

    async def exec(
        self,
        cmd: str,
        *,
        stdin: str | bytes | None = None,
        timeout: float | None = None,
        user: str | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = OUTPUT_LIMIT,
    ) -> ExecResult:
        """``output_limit`` is not the agent's to raise: the harness keeps at most
        ``OUTPUT_LIMIT`` of each stream of an agent's command."""
        sent = wire.to_b64(stdin.encode() if isinstance(stdin, str) else stdin) if stdin else None
        value = await self._channel.request(
            "exec", cmd=cmd, stdin=sent, timeout=timeout, user=user, env=env
        )
        return wire.exec_from_wire(value)

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        """At most ``limit`` bytes, and never more than the harness reads for an agent
        (``AGENT_READ_LIMIT``): a bigger file raises ``FileTooLarge`` (an ``OSError``)."""
        value = await self._channel.request("read_file", path=path, limit=limit)
        return wire.from_b64(value)

    async def write_file(self, path: str, data: bytes) -> None:
        await self._channel.request("write_file", path=path, data=wire.to_b64(bytes(data)))

    async def copy_in(self, src: Path, dest: str) -> None:
        """The child packs the directory itself: the harness never reads a host path the
        agent names."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for item in sorted(Path(src).iterdir()):
                tar.add(item, arcname=item.name)
        await self._channel.request("copy_in", dest=dest, tar=wire.to_b64(buf.getvalue()))

    async def sweep(self) -> int:
        """Agents do not sweep their sandbox; the trial does."""
        return 0

    async def destroy(self, interrupted: bool = False) -> None:
        """Agents do not end their sandbox; the trial does."""
        return None


class RemoteUser:
    """The simulated user of a conversational task, played by the harness."""

    def __init__(self, channel: Channel):
        self._channel = channel

    async def opening(self) -> UserTurn:
        return _turn(await self._channel.request("user_opening"))

    async def reply(self, agent_message: str) -> UserTurn:
        return _turn(await self._channel.request("user_reply", message=str(agent_message)))


def _turn(value: dict[str, Any]) -> UserTurn:
    info = cast(UserTurnInfo, value.get("info") or {})
    return UserTurn(str(value["text"]), bool(value["stop"]), info)


@dataclass(kw_only=True)
class RemoteContext(AgentContext):
    """An ``AgentContext`` whose actions are requests to the harness."""

    channel: Channel = field(repr=False)
    policy_text: str = ""

    @property
    def policy(self) -> str:
        return self.policy_text

    def refresh(self, answer: dict[str, Any]) -> None:
        """Take the harness's usage and the events it recorded for a request."""
        if isinstance(answer.get("usage"), dict):
            wire.usage_into(self.usage, answer["usage"])
        for event in answer.get("events") or []:
            self.trajectory.events.append(Event.model_validate(event))

    def charge(
        self,
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        tokens_cached: int = 0,
        cost_usd: float | None = 0.0,
        steps: int = 0,
        tokens_known: bool = True,
    ) -> None:
        """Tell the harness (which charges the trial), then check the copy of the budgets."""
        self.channel.send(
            {
                "op": "charge",
                "args": {
                    "tokens_in": tokens_in,
                    "tokens_out": tokens_out,
                    "tokens_cached": tokens_cached,
                    "cost_usd": cost_usd,
                    "steps": steps,
                    "tokens_known": tokens_known,
                },
            }
        )
        super().charge(
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tokens_cached=tokens_cached,
            cost_usd=cost_usd,
            steps=steps,
            tokens_known=tokens_known,
        )

    async def call_tool(self, name: str, args: object = None) -> ToolResult:
        value = await self.channel.request("call_tool", name=name, args=args)
        return _tool_result(value)

    async def run_command(self, command: str, timeout: float | None = None) -> ToolResult:
        value = await self.channel.request("run_command", command=command, timeout=timeout)
        return _tool_result(value)

    def say(self, text: str) -> None:
        if self.ended_by is not None:
            raise errors.EpisodeEnded(self.ended_by)
        self.channel.send({"op": "say", "args": {"text": text}})
        self.trajectory.record("message", content=text)


def _tool_result(value: dict[str, Any]) -> ToolResult:
    return ToolResult(bool(value["ok"]), str(value["output"]), int(value["exit_code"]))


def build_context(channel: Channel, start: dict[str, Any]) -> RemoteContext:
    """The agent's context from the harness's ``start`` message."""
    facts = start["context"]
    env = facts.get("environment")
    environment = None
    if env is not None:
        environment = Environment(EnvironmentSpec.model_validate(env["spec"]), Path(env["root"]))
    variant = facts.get("variant")
    ctx = RemoteContext(
        task_id=str(facts["task_id"]),
        arm=Arm.model_validate(facts["arm"]),
        instruction=str(facts["instruction"]),
        sandbox=RemoteSandbox(channel, facts["sandbox"]),
        environment=environment,
        seed=int(facts["seed"]),
        budgets=Budgets.model_validate(facts["budgets"]),
        variant=None if variant is None else Variant.model_validate(variant),
        user=RemoteUser(channel) if facts.get("user") else None,
        user_opens=bool(facts.get("user_opens")),
        channel=channel,
        policy_text=str(facts.get("policy") or ""),
    )
    wire.usage_into(ctx.usage, facts.get("usage") or {})
    channel.ctx = ctx
    return ctx


def _prepare(start: dict[str, Any]) -> None:
    """Take the environment and import path the harness sent, before the agent's module is
    imported; with a proxy socket, relay a loopback port to it and point the model there."""
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in (start.get("env") or {}).items()})
    if start.get("sys_path"):
        sys.path[:] = [str(p) for p in start["sys_path"]]
    socket_path = start.get("proxy_socket")
    if not socket_path:
        return
    from harness.sandbox.relay import listen

    origin = listen(str(socket_path))
    for key, value in os.environ.items():
        os.environ[key] = value.replace(wire.PROXY_ORIGIN, origin)
    model = ((start.get("context") or {}).get("arm") or {}).get("model")
    if isinstance(model, dict) and isinstance(model.get("base_url"), str):
        model["base_url"] = model["base_url"].replace(wire.PROXY_ORIGIN, origin)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    from harness.agents import AGENTS

    start = wire.json_loads(await reader.readline())
    _prepare(start)
    if start.get("op") == "describe":
        writer.write(wire.encode(describe(str(start["agent"]), start.get("params") or {})))
        await writer.drain()
        return
    channel = Channel(reader, writer)
    answers = asyncio.get_running_loop().create_task(channel.read_answers())
    outcome: dict[str, Any]
    try:
        cls = AGENTS.load(str(start["agent"]))
        agent = cls(cls.Params.model_validate(start["context"]["arm"].get("params") or {}))
        ctx = build_context(channel, start)
        channel.send({"op": "ready"})  # the agent's clock starts now
        timeout = ctx.budgets.timeout_s
        with anyio.fail_after(timeout) if timeout else _no_scope():
            result = await agent.run(ctx)
        try:
            checked = validate_result(result)
        except errors.AgentFailure as bad:
            outcome = {"op": "result", "invalid": bad.detail}
        else:
            outcome = {
                "op": "result",
                "value": {
                    "answer": checked.answer,
                    "confidence": checked.confidence,
                    "info": checked.info,
                },
            }
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, cancellation: the agent's
        outcome = {"op": "result", "error": wire.error_to_wire(exc)}
    finally:
        from harness.models import aclose_clients

        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await aclose_clients()
    answers.cancel()
    writer.write(wire.encode(outcome))
    await writer.drain()


def describe(target: str, params: dict[str, Any]) -> dict[str, Any]:
    """Load-time checks of the agent, made here so its module is never imported by the
    harness: that it imports and is an ``Agent`` with ``async def run``, and its params
    against its ``Params`` (the first error's place and message)."""
    import inspect

    from pydantic import ValidationError

    from harness.agents import AGENTS
    from harness.config.loader import first_error
    from harness.registry import RegistryError

    try:
        cls = AGENTS.load(target)
    except RegistryError as exc:
        return {"op": "described", "agent_error": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - the agent's module, whatever it raised
        return {"op": "described", "agent_error": f"importing '{target}' failed: {exc!r}"}
    try:
        cls.Params.model_validate(params)
    except ValidationError as exc:
        loc, message = first_error(exc)
        return {"op": "described", "params_error": {"loc": list(loc), "message": message}}
    return {"op": "described", "async_run": inspect.iscoroutinefunction(cls.run)}


class _no_scope:
    def __enter__(self) -> _no_scope:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


async def _main(sock: socket.socket) -> None:
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=wire.MAX_LINE)
    await _serve(reader, writer)


def serve(fd: int) -> None:
    """Say hello on the channel ``fd`` (a unix socket: the kernel tells the harness this
    process's PID), then serve one agent turn or one load-time check. Exits without
    waiting for threads the agent left behind."""
    sock = socket.socket(fileno=fd)
    code = 0
    try:
        sock.sendall(wire.encode({"op": "hello"}))
        anyio.run(_main, sock)
    except BaseException:  # the channel broke: the harness is gone or stopped us
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    """A plain child (no jail): ``python -c '...main()' FD``. Its stdin is empty and its
    prints go to stderr, as in the jail."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    serve(int(sys.argv[1]))
