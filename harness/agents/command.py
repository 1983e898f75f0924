"""command: run an external agent program, metered through the harness's model proxy.

The program gets the instruction in ``HARNESS_INSTRUCTION`` and on stdin, and reaches the
arm's model through a metering proxy on loopback (``harness.models.proxy``):
``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` point at the proxy and ``OPENAI_API_KEY`` /
``ANTHROPIC_API_KEY`` hold a per-trial dummy token. The real API key stays in the harness
process; the program never sees it. Every model call, streamed or not, is recorded and
charged to the trial, so token, cost and step budgets hold (a step is one model call); past a
budget the proxy refuses further calls and the program is stopped. A call the proxy cannot
serve (an API the arm's ``model.api`` does not provide) ends the trial with a ``ConfigError``
(status ``harness_error``), never as the agent's failure.

Environment of the program (nothing else is inherited from the harness process):
  HARNESS_INSTRUCTION   the task instruction (also on stdin unless ``stdin: false``)
  HARNESS_ANSWER_FILE   where the program may write its final answer
  HARNESS_TRAJECTORY    where the program may append JSONL events to merge into the trajectory
  HARNESS_TOOLS         a JSON file: the environment's tools (name, description, parameters,
                        command: run it in the sandbox with the arguments as JSON on stdin)
  HARNESS_SEED, HARNESS_TASK_ID, HARNESS_WORKDIR, HARNESS_SANDBOX_ID
  HARNESS_PROGRAM       where ``params.program`` is (only when the arm names one)
  OPENAI_BASE_URL, OPENAI_API_BASE, OPENAI_API_KEY, OPENAI_MODEL, ANTHROPIC_BASE_URL,
  ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_MODEL, HARNESS_MODEL, HARNESS_MODEL_API
                        (only when the arm has a model; all keys are the per-trial token)
  PATH, LANG, LC_ALL, TZ, and ``params.env`` / ``params.pass_env``

The answer: the content of ``HARNESS_ANSWER_FILE`` when the program wrote one, else the last
non-empty line of its stdout. A ``CONFIDENCE: <p>`` line (last line of the file, or anywhere
in stdout) is parsed as the stated confidence and is not part of the answer.

Trajectory lines are JSON objects ``{"kind": "tool_call"|"command"|"message"|"note", "tool",
"args", "content", "ok", "latency_s"}``; other kinds become notes. Token and cost fields are
ignored: the proxy measures those. The events are appended after the run, after a note that
says how many were merged, each marked ``reported``: the harness did not see them happen,
so trajectory rules skip them unless the task's grader sets ``reported_events: true``.

Params:
  command     the shell command to run (required)
  where       "sandbox" or "host"; default: "sandbox" for a task with an environment in an
              isolating sandbox (docker, bwrap), else "host". ``host``: a host subprocess in
              its own session and in a jail of its own (``harness.agents.host_jail``: no
              view of the harness's processes or keys, the host read-only), working in the
              sandbox directory (unsafe-local; beside docker and bwrap the suite is refused:
              the program would see none of the task's files). ``sandbox``: ``sandbox.exec``. On ``local`` the program
              reaches the proxy on 127.0.0.1; in a network-less Docker container the proxy
              listens on a unix socket mounted read-only at /run/harness, and
              ``harness.sandbox.relay`` (python3 in the image) serves it on the container's
              own loopback and sets the base URL variables before starting the program.
  program     your program (a file or folder beside the suite), pinned by content and
              installed at image-build time as its own layer (``program_stage``);
              ``HARNESS_PROGRAM`` holds its path inside the sandbox
  stdin       send the instruction on stdin (default true)
  env         extra environment variables for the program (literal values)
  pass_env    names of host environment variables to pass through (never the model key)
  force_model replace the model name the program sends with the arm's (default true)
  timeout_s   wall-clock limit (default: the trial's ``budgets.timeout_s``)
"""

from __future__ import annotations

import json
import os
import posixpath
import shlex
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

import anyio
from pydantic import Field, ValidationInfo, field_validator

from harness.agents import host_jail
from harness.agents.base import Agent, AgentContext, AgentResult
from harness.agents.command_files import ExchangeFiles, exchange_files
from harness.agents.llm import split_confidence
from harness.config.models import Arm, ModelSettings, Options
from harness.errors import AgentFailure, BudgetExceeded, ConfigError
from harness.sandbox.base import SOCKET_MOUNT, AgentBuild

if TYPE_CHECKING:
    from harness.models.proxy import MeteringProxy

_SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")
_TRAJECTORY_KINDS = {"tool_call", "command", "message", "note"}
MAX_MERGED_EVENTS = 10_000
"""Lines of the program's trajectory file merged at most (each becomes an event)."""


class CommandParams(Options):
    """``params`` of the command agent."""

    command: str = Field(min_length=1, description="the shell command to run")
    where: Literal["host", "sandbox"] | None = Field(
        None,
        description="where the program runs: sandbox (inside the trial's sandbox) or host (a "
        "host process; only with unsafe-local, or for tasks without an environment); "
        "default: sandbox when the task has an environment in an isolating sandbox, else host",
    )
    program: str | None = Field(
        None,
        description="your agent program, a file or a folder (relative to the suite file), "
        "pinned by content and installed into the sandbox at image-build time as a layer of its "
        "own (bound read-only on bwrap); $HARNESS_PROGRAM holds its path there",
    )
    stdin: bool = Field(True, description="send the instruction on stdin")
    env: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="extra environment variables (literal values)"
    )
    pass_env: list[str] = Field(
        default_factory=list, description="host environment variables to pass through"
    )
    force_model: bool = Field(True, description="replace the model name the program sends")
    timeout_s: float | None = Field(
        None, gt=0, description="wall-clock limit; default: the trial's budgets.timeout_s"
    )

    @field_validator("program")
    @classmethod
    def _beside_the_suite(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Relative to the suite file's folder (given as ``suite_dir`` in the validation
        context when the suite loads); it must exist now, not at the first trial."""
        base = (info.context or {}).get("suite_dir")
        if value is None or base is None:
            return value
        path = (Path(base) / value).resolve()
        if not path.exists():
            raise ValueError(f"no such file or folder: {path}")
        return str(path)


def _where(params: CommandParams, ctx: AgentContext) -> str:
    """``where`` when the suite left it out: inside the sandbox when there is an isolating
    one, else on the host (unsafe-local, or a task without an environment)."""
    if params.where is not None:
        return params.where
    return "sandbox" if ctx.environment is not None and ctx.sandbox.isolated else "host"


class CommandAgent(Agent):
    name = "command"
    Params = CommandParams
    observes_actions = False

    @classmethod
    def runs_on_host(cls, params: Options, arm: Arm) -> bool:
        """``where: host``, or left out (the host for unsafe-local and for tasks without an
        environment): the host jail must be buildable."""
        return isinstance(params, CommandParams) and params.where != "sandbox"

    @classmethod
    def runs_on_host_beside_sandbox(cls, params: Options, arm: Arm) -> bool:
        return isinstance(params, CommandParams) and params.where == "host"

    @classmethod
    def wants_socket_dir(cls, params: Options, arm: Arm, environment: bool = True) -> bool:
        """A program inside the sandbox that talks to a model needs the proxy's socket
        (left to the default, ``where`` is the sandbox only for a task with an environment)."""
        if not isinstance(params, CommandParams) or arm.model is None:
            return False
        return params.where == "sandbox" or (params.where is None and environment)

    @classmethod
    def build(cls, arm: Arm, params: Options) -> AgentBuild | None:
        """Your ``program``, installed into each environment's image as a layer of its own."""
        if not isinstance(params, CommandParams) or params.program is None:
            return None
        from harness.agents.program_stage import program_build

        return program_build(params.program)

    # long: the program's whole life (metering proxy, exchanged files, the run, its answer and
    #   trajectory) runs inside one exit stack, released on any exit.
    async def run(self, ctx: AgentContext) -> AgentResult:
        """Run the suite's ``command`` once, on the host or in the sandbox."""
        params = self.params_as(ctx, CommandParams)
        command = params.command
        if not command.strip():
            raise ConfigError("suite", f"arms.{ctx.arm.name}.params.command", "required")
        where = _where(params, ctx)
        timeout = ctx.budgets.timeout_s if params.timeout_s is None else params.timeout_s

        async with AsyncExitStack() as stack:
            proxy = None
            if ctx.model is not None:
                from harness.models.proxy import metering_proxy

                socket_dir = ctx.sandbox.socket_dir if where == "sandbox" else None
                if where == "sandbox" and socket_dir is None and ctx.sandbox.isolated:
                    raise ConfigError(
                        "suite",
                        f"arms.{ctx.arm.name}.params.where",
                        f"sandbox {ctx.sandbox.id} has no socket to the metering proxy, so "
                        "a program inside it cannot reach the model",
                    )
                unix_path = (
                    f"{socket_dir}/model-{uuid.uuid4().hex[:8]}.sock" if socket_dir else None
                )
                proxy = await stack.enter_async_context(
                    metering_proxy(
                        ctx,
                        ctx.model,
                        force_model=params.force_model,
                        unix_path=unix_path,
                    )
                )
                if unix_path is not None:
                    command = _relayed(command, posixpath.basename(unix_path))
            files = await stack.enter_async_context(exchange_files(ctx, where))
            env = self._env(ctx, params, proxy, files)
            start = time.monotonic()
            outcome: host_jail.ProgramRun = {}
            timed_out = False
            with anyio.move_on_after(timeout) as deadline:
                async with anyio.create_task_group() as tg:

                    async def runner() -> None:
                        try:
                            outcome.update(
                                await self._execute(ctx, params, command, where, env, files)
                            )
                        except Exception as exc:  # re-raised below, unwrapped
                            outcome["error"] = exc
                        tg.cancel_scope.cancel()

                    async def watchdog() -> None:
                        assert proxy is not None
                        await proxy.stop_event.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(runner)
                    if proxy is not None:
                        tg.start_soon(watchdog)
            timed_out = deadline.cancelled_caught
            elapsed = time.monotonic() - start
            answer_text = await files.read("answer")
            trajectory_text = await files.read("trajectory")

        if "error" in outcome:
            raise outcome["error"]
        code = outcome.get("exit_code")
        stdout, stderr = outcome.get("stdout", ""), outcome.get("stderr", "")
        ctx.trajectory.record(
            "command",
            tool="agent",
            args={  # the user's command, not the relay's; the bytes past the output cap
                "command": params.command,
                "where": where,
                "output_dropped": outcome.get("dropped", 0),
            },
            content=_tail(stdout + ("\n" + stderr if stderr else ""), 4000),
            ok=code == 0,
            latency_s=elapsed,
        )
        self._merge_trajectory(ctx, trajectory_text)

        if proxy is not None and proxy.config_error is not None:
            raise proxy.config_error
        if proxy is not None and proxy.exceeded is not None:
            raise proxy.exceeded
        if proxy is not None and proxy.infra_error is not None:
            raise proxy.infra_error
        if timed_out or outcome.get("timed_out"):
            raise BudgetExceeded("timeout", f"the agent program ran longer than {timeout}s")
        if code != 0:
            raise AgentFailure(
                "agent_crashed", f"exit code {code}; stderr: {_tail(stderr, 500).strip()}"
            )

        answer, confidence = _answer(answer_text, stdout)
        if answer is not None:
            ctx.say(answer)
        return AgentResult(
            answer=answer,
            confidence=confidence,
            info={
                "exit_code": code,
                "where": where,
                "model_calls": proxy.calls if proxy else 0,
                **(
                    {"calls_without_usage": proxy.unmetered_calls}
                    if proxy is not None and proxy.unmetered_calls
                    else {}
                ),
            },
        )

    # -- environment ----------------------------------------------------------------------
    def _env(
        self,
        ctx: AgentContext,
        params: CommandParams,
        proxy: MeteringProxy | None,
        files: ExchangeFiles,
    ) -> dict[str, str]:
        env = {k: os.environ[k] for k in _SAFE_ENV_KEYS if k in os.environ}
        secret_names = {ctx.model.api_key_env} if ctx.model and ctx.model.api_key_env else set()
        secret_values = {os.environ[n] for n in secret_names if os.environ.get(n)}
        for name in params.pass_env:
            if name in secret_names:
                raise ConfigError(
                    "suite",
                    f"arms.{ctx.arm.name}.params.pass_env",
                    f"'{name}' holds the model's API key; the program gets a proxy token instead",
                )
            if name in os.environ and os.environ[name] not in secret_values:
                env[name] = os.environ[name]
        env.update({k: str(v) for k, v in params.env.items()})
        env.update(
            HARNESS_INSTRUCTION=ctx.instruction,
            HARNESS_ANSWER_FILE=files.path("answer"),
            HARNESS_TRAJECTORY=files.path("trajectory"),
            HARNESS_TOOLS=files.path("tools"),
            HARNESS_SEED=str(ctx.seed),
            HARNESS_TASK_ID=ctx.task_id,
            HARNESS_WORKDIR=ctx.sandbox.workdir,
            HARNESS_SANDBOX_ID=ctx.sandbox.id,
        )
        if proxy is not None:
            env.update(model_env(proxy.origin, proxy.token, proxy.settings))
        program = self._program(ctx, params)
        if program is not None:
            env["HARNESS_PROGRAM"] = program
        if any(v in secret_values for v in env.values()):  # belt and braces
            raise ConfigError("suite", f"arms.{ctx.arm.name}.params.env", "holds the API key")
        return env

    def _program(self, ctx: AgentContext, params: CommandParams) -> str | None:
        """Where the suite's ``program`` is for this trial: installed in the sandbox by its
        backend, or (unsafe-local, no environment) the pinned copy on the host."""
        if params.program is None:
            return None
        if ctx.sandbox.agent_path:
            return ctx.sandbox.agent_path
        if ctx.environment is not None and ctx.sandbox.isolated:
            raise ConfigError(
                "suite",
                f"arms.{ctx.arm.name}.params.program",
                f"sandbox {ctx.sandbox.id} has no place for the program (a backend that "
                "cannot install it)",
            )
        from harness.agents.program_stage import program_build

        build = program_build(params.program)
        return str(build.fetch() / build.executable) if build.executable else str(build.fetch())

    # -- running ----------------------------------------------------------------------------
    async def _execute(
        self,
        ctx: AgentContext,
        params: CommandParams,
        command: str,
        where: str,
        env: dict[str, str],
        files: ExchangeFiles,
    ) -> host_jail.ProgramRun:
        stdin = ctx.instruction if params.stdin else None
        if where == "sandbox":
            timeout = ctx.budgets.timeout_s if params.timeout_s is None else params.timeout_s
            result = await ctx.sandbox.exec(command, stdin=stdin, env=env, timeout=timeout)
            return {
                "exit_code": result.exit_code,
                "stdout": result.stdout,
                "stderr": result.stderr,
                "timed_out": result.timed_out,
                "dropped": result.dropped,
            }
        host_jail.require(f"arms.{ctx.arm.name}.params.where")
        assert files.host_cwd is not None  # a host program's files are on the host
        return await host_jail.run_jailed(
            ["bash", "-c", command], stdin=stdin, cwd=files.host_cwd, writable=[files.base], env=env
        )

    def _merge_trajectory(self, ctx: AgentContext, text: str | None) -> None:
        if not text or not text.strip():
            return
        lines = [line for line in text.splitlines() if line.strip()]
        left_out = max(0, len(lines) - MAX_MERGED_EVENTS)
        lines = lines[:MAX_MERGED_EVENTS]
        ctx.trajectory.record(
            "note",
            content=f"merged {len(lines)} event(s) from the program's trajectory file"
            + (
                f"; {left_out} more line(s) left out (at most {MAX_MERGED_EVENTS})"
                if left_out
                else ""
            ),
        )
        for line in lines:
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested too deep
                obj = None
            if not isinstance(obj, dict):
                ctx.trajectory.record(
                    "note", content=f"unparseable trajectory line: {line[:500]}", ok=False
                )
                continue
            kind = str(obj["kind"]) if obj.get("kind") in _TRAJECTORY_KINDS else "note"
            fields: _EventFields = {}
            if isinstance(obj.get("tool"), str):
                fields["tool"] = obj["tool"]
            if isinstance(obj.get("args"), dict):
                fields["args"] = obj["args"]
            if kind == "note" and obj.get("kind") not in (None, "note"):
                fields["args"] = {**fields.get("args", {}), "program_kind": str(obj.get("kind"))}
            content = obj.get("content")
            if content is not None:
                fields["content"] = content if isinstance(content, str) else json.dumps(content)
            if isinstance(obj.get("ok"), bool):
                fields["ok"] = obj["ok"]
            if isinstance(obj.get("latency_s"), int | float):
                fields["latency_s"] = float(obj["latency_s"])
            ctx.trajectory.record(kind, reported=True, **fields)


# ------------------------------------------------------------------------------ helpers
class _EventFields(TypedDict, total=False):
    """The fields of one line of the program's trajectory file the harness keeps."""

    tool: str
    args: dict[str, object]
    content: str
    ok: bool
    latency_s: float


def model_env(origin: str, token: str, settings: ModelSettings) -> dict[str, str]:
    """The variables that point OpenAI and Anthropic clients at the proxy (``origin``:
    scheme, host and port) with the per-trial token as their key."""
    return {
        "OPENAI_BASE_URL": f"{origin}/v1",
        "OPENAI_API_BASE": f"{origin}/v1",
        "OPENAI_API_KEY": token,
        "OPENAI_MODEL": settings.name,
        "ANTHROPIC_BASE_URL": origin,
        "ANTHROPIC_API_KEY": token,
        "ANTHROPIC_AUTH_TOKEN": token,
        "ANTHROPIC_MODEL": settings.name,
        "HARNESS_MODEL": settings.name,
        "HARNESS_MODEL_API": settings.api,
    }


def _relayed(command: str, socket_name: str) -> str:
    """``command`` run by the in-container relay to the proxy's mounted unix socket."""
    source = (Path(__file__).parents[1] / "sandbox" / "relay.py").read_text()
    socket_path = f"{SOCKET_MOUNT}/{socket_name}"
    return f"python3 -c {shlex.quote(source)} {shlex.quote(socket_path)} {shlex.quote(command)}"


def _answer(file_text: str | None, stdout: str) -> tuple[str | None, float | None]:
    if file_text is not None and file_text.strip():
        return split_confidence(file_text)
    _, confidence = split_confidence(stdout)
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    for line in reversed(lines):
        answer, stated = split_confidence(line)
        if stated is None and answer:
            return answer, confidence
    return None, confidence


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else "…" + text[-n:]


__all__ = ["CommandAgent"]
