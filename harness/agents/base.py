"""The agent boundary: ``await agent.run(context) -> AgentResult``.

The context carries everything an agent may use (instruction, tools, sandbox, model
settings, seed, budgets, trajectory recorder) and nothing a user would not give it: no
``Task``, graders, expected state or answers, reference solution or hidden files are
reachable from it. Only the built-in reference agents (oracle, simulated, mutants), which
declare ``reference_solution = True`` and live in ``harness.agents``, get a
``ReferenceContext`` carrying a private copy of the task. Budgets are enforced here, in one place:
``context.charge`` and ``context.call_tool`` raise ``BudgetExceeded``, which ends the trial
as the agent's failure, never as an infrastructure error.
"""

from __future__ import annotations

import abc
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from pydantic import ValidationError

from harness import text
from harness.agents.user import SimulatedUser
from harness.config.models import (
    Arm,
    Budgets,
    ModelSettings,
    Options,
    Task,
    ToolSpec,
    Variant,
)
from harness.errors import AgentFailure, BudgetExceeded, ConfigError, EpisodeEnded
from harness.sandbox.base import AgentBuild, Environment, ExecResult, Sandbox
from harness.sandbox.output import AGENT_READ_LIMIT
from harness.trajectory import Trajectory


@dataclass
class Usage:
    """Token and cost accounting of one trial. ``cost_usd`` is None when a price is unknown:
    unknown is never reported as zero. The token counts sum what the model calls reported
    (budgets are enforced on them); ``tokens_known`` turns False once a call reported no
    usage, and the trial's tokens are then recorded as unknown (``recorded_tokens``)."""

    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0
    cost_known: bool = True
    tokens_known: bool = True
    steps: int = 0
    model_calls: int = 0
    malformed_tool_calls: int = 0

    @property
    def tokens_total(self) -> int:
        return self.tokens_in + self.tokens_out

    def recorded_tokens(self) -> tuple[int | None, int | None, int | None]:
        """(in, cached, out) as the trial row stores them: all None when any call's usage
        was unknown, since a partial sum is not the trial's usage."""
        if not self.tokens_known:
            return None, None, None
        return self.tokens_in, self.tokens_cached, self.tokens_out


class ToolCalls(Protocol):
    """What an agent's context needs of the trial's tool server
    (``harness.tools.client.ToolServer``, or a forwarder to it)."""

    tools: list[str]

    async def call(self, tool: str, args: dict[str, object], timeout: float, /) -> tuple[bool, str]:
        """(ok, output) of one tool call."""
        ...


@dataclass
class ToolResult:
    ok: bool
    output: str
    exit_code: int = 0


@dataclass
class AgentContext:
    task_id: str
    """The task's id (a label, like a ticket number): nothing of its graders or solution."""
    arm: Arm
    instruction: str
    sandbox: Sandbox
    environment: Environment | None
    seed: int
    budgets: Budgets
    trajectory: Trajectory = field(default_factory=Trajectory)
    usage: Usage = field(default_factory=Usage)
    variant: Variant | None = None
    user: SimulatedUser | None = None
    """The simulated user of a conversational task, built by the trial (part of the
    environment: the agent talks to it, it does not get its script or private goal)."""
    user_opens: bool = False
    """The user (not the instruction) writes the opening message (``user.goal`` tasks)."""
    started: float = field(default_factory=time.monotonic)
    ended_by: str | None = None
    """The terminating tool that ended the episode, once one has run."""
    tool_server: ToolCalls | None = None
    """The trial's ``harness.tools.client.ToolServer`` when the environment has one: tool
    calls go to it instead of one process per call."""

    @property
    def params(self) -> dict[str, object]:
        """The arm's params as the suite wrote them; an agent reads its own through
        ``Agent.params_as`` (typed)."""
        return self.arm.params

    @property
    def model(self) -> ModelSettings | None:
        return self.arm.model

    @property
    def tools(self) -> list[ToolSpec]:
        tools = list(self.environment.spec.tools) if self.environment else []
        if self.variant and self.variant.tool_order:
            order = {n: i for i, n in enumerate(self.variant.tool_order)}
            tools.sort(key=lambda t: order.get(t.name, len(order)))
        return tools

    @property
    def policy(self) -> str:
        env = self.environment
        if env and env.spec.policy:
            path = env.root / env.spec.policy
            if path.is_file():
                return path.read_text()
        return ""

    # -- budgets ------------------------------------------------------------------------
    @property
    def action_steps(self) -> int:
        """Steps a tool call or command costs. A step is one model call (one turn of the
        model, counted where the call is metered); an arm without a model has no model
        turns, so each of its tool calls and commands is a step instead."""
        return 0 if self.model is not None else 1

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
        """Account usage, then raise BudgetExceeded if a limit is now passed.
        ``tokens_known=False``: the call reported no usage (its tokens are unknown)."""
        u = self.usage
        u.tokens_known = u.tokens_known and tokens_known
        u.tokens_in += tokens_in
        u.tokens_out += tokens_out
        u.tokens_cached += tokens_cached
        u.steps += steps
        if cost_usd is None:
            u.cost_known = False
        elif u.cost_usd is not None:
            u.cost_usd += cost_usd
        if not u.cost_known:
            u.cost_usd = None
        b = self.budgets
        if b.max_steps is not None and u.steps > b.max_steps:
            raise BudgetExceeded("max_steps", f"{u.steps} steps > {b.max_steps}")
        if b.max_tokens is not None and u.tokens_total > b.max_tokens:
            raise BudgetExceeded("max_tokens", f"{u.tokens_total} tokens > {b.max_tokens}")
        if b.max_cost_usd is not None and u.cost_usd is not None and u.cost_usd > b.max_cost_usd:
            spent, limit = _distinct(u.cost_usd, b.max_cost_usd)
            raise BudgetExceeded("max_cost_usd", f"${spent} > ${limit}")

    # -- acting -------------------------------------------------------------------------
    async def call_tool(self, name: str, args: object = None) -> ToolResult:
        """Run one environment tool in the sandbox and record it as a trajectory step.

        ``args`` is whatever the agent sent; only a JSON object (or None) reaches the tool,
        as JSON on stdin. An unknown tool or bad arguments
        give an error result (fed back to the agent), never an exception. A tool declared
        ``terminates`` runs, is recorded, then raises ``EpisodeEnded``; so does every call
        after it, so an agent that swallows the exception still cannot act again.
        """
        if self.ended_by is not None:
            raise EpisodeEnded(self.ended_by)
        self.charge(steps=self.action_steps)
        spec = next((t for t in self.tools if t.name == name), None)
        start = time.monotonic()
        if spec is None:
            self.usage.malformed_tool_calls += 1
            msg = f"error: unknown tool '{name}'"
            kept = args if isinstance(args, dict) else {}
            self.trajectory.record("tool_call", tool=name, args=kept, content=msg, ok=False)
            return ToolResult(False, msg, 127)
        if args is not None and not isinstance(args, dict):
            self.usage.malformed_tool_calls += 1
            msg = "error: tool arguments must be a JSON object"
            self.trajectory.record("tool_call", tool=name, args={}, content=msg, ok=False)
            return ToolResult(False, msg, 2)
        if self.tool_server is not None:
            ok, output = await self.tool_server.call(name, args or {}, spec.timeout_s)
            result = ExecResult(0 if ok else 1, output, "")
        else:
            result = await self.sandbox.exec(
                spec.command or "false", stdin=json.dumps(args or {}), timeout=spec.timeout_s
            )
            output = result.stdout if result.ok else (result.stdout + result.stderr)
        if result.timed_out:
            output = f"error: tool '{name}' timed out after {spec.timeout_s}s"
        if self.variant and self.variant.distractor and result.ok:
            output = f"{output}\n{self.variant.distractor}"
        self.trajectory.record(
            "tool_call",
            tool=name,
            args=args or {},
            content=output,
            ok=result.ok,
            latency_s=time.monotonic() - start,
        )
        if spec.terminates:
            self.ended_by = name
            raise EpisodeEnded(name)
        return ToolResult(result.ok, output, result.exit_code)

    async def run_command(self, command: str, timeout: float | None = None) -> ToolResult:
        """Run a raw shell command (for shell-style agents) and record it."""
        result = await self.sandbox_exec(command, timeout=timeout)
        return ToolResult(result.ok, result.stdout + result.stderr, result.exit_code)

    # -- sandbox calls on an agent's behalf: observed, recorded and charged ---------------
    async def sandbox_exec(
        self,
        command: str,
        *,
        stdin: str | bytes | None = None,
        timeout: float | None = None,
        user: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """``sandbox.exec`` for an agent: recorded as a ``command`` event of tool ``bash``
        (trajectory rules on ``bash`` see it) and charged as a step like any action."""
        self._before_action()
        start = time.monotonic()
        result = await self.sandbox.exec(command, stdin=stdin, timeout=timeout, user=user, env=env)
        args: dict[str, object] = {"command": command}
        if user is not None:
            args["user"] = user
        self.trajectory.record(
            "command",
            tool="bash",
            args=args,
            content=result.stdout + result.stderr,
            ok=result.ok,
            latency_s=time.monotonic() - start,
        )
        return result

    async def sandbox_read(self, path: str, limit: int | None = None) -> bytes:
        """``sandbox.read_file`` for an agent: a ``command`` event of tool ``read_file``.
        Never more than ``AGENT_READ_LIMIT`` bytes (a bigger file raises ``FileTooLarge``)."""
        self._before_action()
        start = time.monotonic()
        limit = AGENT_READ_LIMIT if limit is None else min(limit, AGENT_READ_LIMIT)
        try:
            data = await self.sandbox.read_file(path, limit)
        except Exception as exc:
            self._file_event("read_file", path, f"error: {type(exc).__name__}", False, start)
            raise
        self._file_event("read_file", path, f"{len(data)} bytes", True, start)
        return data

    async def sandbox_write(self, path: str, data: bytes) -> None:
        """``sandbox.write_file`` for an agent: a ``command`` event of tool ``write_file``."""
        self._before_action()
        start = time.monotonic()
        await self.sandbox.write_file(path, data)
        self._file_event("write_file", path, f"{len(data)} bytes", True, start)

    async def sandbox_copy_in(self, src: Path, dest: str) -> None:
        """``sandbox.copy_in`` for an agent: a ``command`` event of tool ``copy_in``."""
        self._before_action()
        start = time.monotonic()
        await self.sandbox.copy_in(src, dest)
        self._file_event("copy_in", dest, "copied", True, start)

    def _before_action(self) -> None:
        if self.ended_by is not None:
            raise EpisodeEnded(self.ended_by)
        self.charge(steps=self.action_steps)

    def _file_event(self, tool: str, path: str, content: str, ok: bool, start: float) -> None:
        self.trajectory.record(
            "command",
            tool=tool,
            args={"path": path},
            content=content,
            ok=ok,
            latency_s=time.monotonic() - start,
        )

    def say(self, text: str) -> None:
        """Tell the user something (graded by answer and required-output graders)."""
        if self.ended_by is not None:
            raise EpisodeEnded(self.ended_by)
        self.trajectory.record("message", content=text)


def _distinct(value: float, limit: float) -> tuple[str, str]:
    """Both numbers with as few significant digits as show ``value`` above ``limit``."""
    for digits in range(4, 16):
        a, b = f"{value:.{digits}g}", f"{limit:.{digits}g}"
        if a != b:
            return a, b
    return repr(value), repr(limit)


@dataclass(kw_only=True)
class ReferenceContext(AgentContext):
    """The context of a built-in reference agent: also a private deep copy of the task
    (its solution, simulated failure plans and grader specs). Never given to other agents;
    graders read a copy of their own, so nothing done to this one changes a verdict."""

    task: Task


def is_reference_agent(cls: type) -> bool:
    """Does ``cls`` get the task? Only built-in agents that declare they act out the
    reference solution: a ``module:Class`` agent's claim is ignored."""
    return (
        issubclass(cls, Agent)
        and cls.reference_solution
        and (cls.__module__.startswith("harness.agents."))
    )


_P = TypeVar("_P", bound=Options)


@dataclass
class AgentResult:
    answer: str | None = None
    """The agent's final answer to the user (None when it gave none)."""
    confidence: float | None = None
    """Stated confidence in [0, 1], when the agent gives one (used for calibration)."""
    info: dict[str, object] = field(default_factory=dict)
    """Free-form facts about the run for the report (checked to be JSON when the agent
    returns; the harness never reads them)."""


def validate_result(obj: Any) -> AgentResult:
    """A checked copy of what an agent returned, or ``AgentFailure('invalid_agent_result')``.

    The copy (``info`` through a JSON round trip) is what the trial keeps: nothing the agent
    does to the object afterwards reaches the store or a grader."""

    def bad(why: str) -> AgentFailure:
        return AgentFailure("invalid_agent_result", why)

    if not isinstance(obj, AgentResult):
        raise bad(f"the agent returned {type(obj).__name__}, not an AgentResult")
    if obj.answer is not None and not isinstance(obj.answer, str):
        raise bad(f"answer is {type(obj.answer).__name__}, not a string or None")
    if obj.answer is not None and (at := text.invalid_at(obj.answer)) is not None:
        raise bad(f"answer is not valid text: lone surrogate U+{ord(obj.answer[at]):04X} at {at}")
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


class Agent(abc.ABC):
    """An agent under test, registered by name in ``harness.agents.AGENTS`` (or named by an
    arm as ``module:Class``). Subclass it and implement ``run``.

    ``Params`` is the typed model of the arm's ``params`` (unknown keys are load-time
    errors naming the field, checked by ``harness.resolve``); the validated model arrives
    in ``__init__``, and ``ctx.params`` keeps the values as the suite wrote them.

    Optional capabilities, with defaults here (never probed with ``hasattr``):
    ``wants_socket_dir`` (a program inside the sandbox talks to the metering proxy, so
    the proxy's socket directory is mounted there) and ``pinned`` (the build of a
    ready-made agent, written to the lock file) and ``build`` (the CLI a ready-made agent
    needs built into the task's image).
    """

    name: ClassVar[str]
    Params: ClassVar[type[Options]] = Options
    reference_solution: ClassVar[bool] = False
    """Built-in agents that act out the task's reference solution get the task itself
    (``ReferenceContext``); the claim counts only for classes in ``harness.agents``."""
    observes_actions: ClassVar[bool] = True
    """The agent acts only through its context (tools, commands, sandbox calls), so the
    harness sees every action. False for agent programs (``command``, ``claude-code``,
    ``codex``) whose commands in their sandbox the harness never sees: trajectory rules
    cannot be checked for them unless the task counts reported events."""

    def __init__(self, params: Options | None = None) -> None:
        self.params = params
        """The arm's validated ``Params`` in a run (None when built bare, as tests do)."""

    def params_as(self, ctx: AgentContext, model: type[_P]) -> _P:
        """This agent's params as its typed model: the run's validated ``self.params``, or,
        for an agent built bare (tests, an agent run by another agent), ``ctx.params``
        validated now; a wrong key or value is then a ConfigError naming the field. (A
        subclass that declares unrelated ``Params`` gets ``model``'s fields out of them.)"""
        if isinstance(self.params, model):
            return self.params
        given = ctx.params
        if self.params is not None:  # a subclass with Params of its own: take ours from them
            given = {k: v for k, v in given.items() if k in model.model_fields}
        try:
            return model.model_validate(given)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "".join(f".{part}" for part in first["loc"])
            raise ConfigError("suite", f"arms.{ctx.arm.name}.params{where}", first["msg"]) from None

    @classmethod
    def wants_socket_dir(cls, params: Options, arm: Arm, environment: bool = True) -> bool:
        """Whether a sandbox for this arm must mount the proxy's socket directory
        (``environment``: the task has one, so there is a sandbox to run a program in)."""
        return False

    @classmethod
    def runs_on_host(cls, params: Options, arm: Arm) -> bool:
        """Whether this arm runs a program on the harness's machine (in the host jail,
        ``harness.agents.host_jail``, which preflight checks can be built). Default: no."""
        return False

    @classmethod
    def pinned(cls, arm: Arm) -> str | None:
        """The build of a ready-made agent this arm runs, recorded in the lock file (and
        checked by ``--locked``). Default: None (nothing to pin)."""
        return None

    @classmethod
    def build(cls, arm: Arm, params: Options) -> AgentBuild | None:
        """The program this arm installs into the task's image at image-build time (a
        ready-made agent's CLI, the command agent's ``program``): one image per environment
        and build, pinned beside the task image. ``params``: the arm's validated params.
        Default: None (the agent needs nothing in the image)."""
        return None

    @classmethod
    def runs_on_host_beside_sandbox(cls, params: Options, arm: Arm) -> bool:
        """Whether the arm runs its program on the host even for a task that has a sandbox
        (refused with an isolating backend: the program would see none of the task's files).
        Default: no."""
        return False

    @abc.abstractmethod
    async def run(self, ctx: AgentContext) -> AgentResult:
        """Act on the task through ``ctx`` and return the final answer (or raise
        ``AgentFailure``/``BudgetExceeded``: the agent's failure, never retried)."""
