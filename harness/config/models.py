"""Typed configuration: suites, arms, tasks and environments.

Every model forbids unknown keys, so a typo in a YAML file is an error that names the field,
not a silently ignored setting. Defaults live here, not in the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.config.base import (
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_STEPS,
    MAX_TOKENS,
    MAX_WEIGHT,
    Count,
    FieldError,
    Money,
    Seconds,
    Seed,
    Strict,
)
from harness.config.release import GatePolicy, Repeats, ReportSettings
from harness.config.roles import decide_roles


class Options(Strict):
    """Base of a backend's typed options (``sandbox_options``, ``executor_options``) and of an
    agent's ``params``: each backend or agent class declares its own subclass, so a misspelt
    key is a load-time error naming the field. The base itself accepts no keys."""


# ------------------------------------------------------------------------------ budgets
class Budgets(Strict):
    """Per-trial limits. Exceeding one ends the trial as an agent failure, never a retry."""

    max_steps: int | None = Field(
        50, strict=True, ge=1, le=MAX_STEPS, description="tool calls / model turns"
    )
    max_tokens: int | None = Field(
        None, strict=True, ge=1, le=MAX_TOKENS, description="input + output tokens"
    )
    max_cost_usd: float | None = Field(
        None, gt=0, le=1e9, allow_inf_nan=False, description="US dollars"
    )
    timeout_s: Seconds | None = Field(600.0, description="wall-clock seconds for the agent")

    def merged(self, override: BudgetOverride | None) -> Budgets:
        if override is None:
            return self
        return self.model_copy(update=override.model_dump(exclude_unset=True))


class BudgetOverride(Strict):
    max_steps: int | None = Field(None, strict=True, ge=1, le=MAX_STEPS)
    max_tokens: int | None = Field(None, strict=True, ge=1, le=MAX_TOKENS)
    max_cost_usd: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    timeout_s: Seconds | None = None


class Retries(Strict):
    """Infrastructure-only retries. There is deliberately no option to retry failed trials."""

    max_attempts: int = Field(
        3, strict=True, ge=1, le=MAX_ATTEMPTS, description="attempts per trial, first one included"
    )
    backoff_s: float = Field(
        1.0,
        ge=0,
        le=3600,
        allow_inf_nan=False,
        description="base of the exponential backoff, seconds",
    )
    stop_after: int = Field(
        3,
        strict=True,
        ge=1,
        le=10_000,
        description="consecutive attempts one model endpoint fails with the same cause before "
        "the run stops (resumable); a refused key stops it at once",
    )


class Limits(Strict):
    """Resource limits applied to each sandbox (Docker backend)."""

    memory: str = Field(
        "1g",
        pattern=r"^[0-9]+(\.[0-9]+)?[bkmgtBKMGT]?[bB]?$",
        description="bytes, or a number with a unit: 512m, 1g",
    )
    pids: int = Field(256, strict=True, ge=16, le=1_000_000)
    cpus: float = Field(1.0, gt=0, le=1024, allow_inf_nan=False)


class ModelSettings(Strict):
    """An OpenAI-compatible endpoint. The API key is read from ``api_key_env`` at run time
    and is never stored, logged or passed into a sandbox."""

    name: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float | None = Field(None, ge=0, le=10, allow_inf_nan=False)
    max_tokens: int | None = Field(None, strict=True, ge=1, le=MAX_TOKENS)
    timeout_s: Seconds = 120.0
    max_retries: int = Field(4, strict=True, ge=0, le=MAX_ATTEMPTS)
    extra: dict[str, object] = Field(default_factory=dict)
    price: Price | None = None
    api: Literal["openai", "anthropic"] = Field(
        "openai",
        description="the upstream's API kind: openai (chat completions, Responses; Bearer key) "
        "or anthropic (Messages; x-api-key). The command agent's proxy serves that kind only.",
    )


class Price(Strict):
    """US dollars per million tokens."""

    input: Money
    cached_input: Money | None = None
    output: Money
    cache_write: Money | None = Field(
        None, description="prompt tokens written to the cache; default the input price"
    )


class Arm(Strict):
    """One configuration under test: an agent, its parameters and its model."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    agent: str = Field(description="registered agent name or 'module:Class'")
    params: dict[str, object] = Field(
        default_factory=dict, description="the agent's parameters, checked against its Params"
    )
    model: ModelSettings | None = None


class Suite(Strict):
    """A suite file: what to run, how often, against which arms, and where to store it."""

    name: str
    description: str = ""
    seed: Seed = 0
    trials: Count = Field(1, description="trials per task per arm")
    tasks: list[str] = Field(min_length=1, description="task files or globs, relative to the suite")
    environments_dir: str | None = Field(
        None, description="where environments live; default: nearest 'environments/' upward"
    )
    arms: list[Arm] = Field(min_length=1)
    concurrency: int = Field(4, strict=True, ge=1, le=MAX_CONCURRENCY)
    sandbox: str = Field(
        "auto",
        description="auto (docker when a daemon answers, else local), local, docker, "
        "faulty (fault injection), or module:Class",
    )
    sandbox_options: dict[str, object] = Field(
        default_factory=dict,
        description="options of the sandbox backend, checked against its typed options",
    )
    executor: str = Field(
        "local",
        exclude=True,  # where trials run, not what they measure: outside the config hash
        description="where trials run: local (this process), ray (tasks on a Ray cluster), "
        "or module:Class",
    )
    ray_address: str | None = Field(
        None,
        exclude=True,
        description="Ray cluster address for executor ray (host:port, ray://host:10001 or "
        "auto); default: $RAY_ADDRESS, else Ray on this machine (started if none runs)",
    )
    executor_options: dict[str, object] = Field(
        default_factory=dict,
        exclude=True,
        description="options of the executor backend, checked against its typed options",
    )
    budgets: Budgets = Field(default_factory=Budgets)
    retries: Retries = Field(default_factory=Retries)
    limits: Limits = Field(default_factory=Limits)
    store: str | None = Field(
        None, description="SQLAlchemy URL; default sqlite:///.harness/harness.db"
    )
    report: ReportSettings = Field(default_factory=ReportSettings)
    variants: bool = Field(False, description="also run each task's declared variants, paired")
    denominator: Literal["failure", "exclude"] = Field(
        "failure", description="how unresolved trials count: as failures (default) or excluded"
    )
    gate: GatePolicy | None = Field(None, description="the release rule `harness gate` applies")
    aa: bool = Field(
        False,
        description="also run a copy of the baseline arm, named '<baseline>-aa', interleaved "
        "with the others: its delta against the baseline is the noise floor (eval-harness guide)",
    )
    repeats: Repeats = Field(default_factory=Repeats)

    def primary_arms(self) -> tuple[str, str | None]:
        """(baseline, candidate) of the primary comparison, by the one rule every view uses
        (``harness.config.roles``: gate.primary, report.primary, else the arms' order)."""
        gate = self.gate.primary if self.gate else None
        report = self.report.primary
        roles = decide_roles(
            [a.name for a in self.arms],
            gate=(gate.baseline, gate.candidate) if gate else None,
            report=(report.baseline, report.candidate) if report else None,
        )
        return roles.baseline or self.arms[0].name, roles.candidate

    @model_validator(mode="after")
    def _unique_arms(self) -> Suite:
        names = [a.name for a in self.arms]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            first = next(i for i, n in enumerate(names) if n in dup and names.index(n) != i)
            raise FieldError(
                ("arms", first, "name"), f"duplicate arm name(s): {', '.join(sorted(dup))}"
            )
        copy = f"{self.primary_arms()[0]}-aa" if self.aa else None  # what aa: true adds
        for where, primary in (
            ("report", self.report.primary),
            ("gate", self.gate.primary if self.gate else None),
        ):
            if primary:
                for role in ("baseline", "candidate"):
                    side = getattr(primary, role)
                    if side not in names and side != copy:
                        raise FieldError(
                            (where, "primary", role),
                            f"names unknown arm '{side}' (arms: {', '.join(names)})",
                        )
        if self.aa:  # the A/A copy of the baseline; idempotent, so a stored config reloads
            base = self.primary_arms()[0]
            if base not in names:
                raise FieldError(("aa",), f"the primary baseline '{base}' is not an arm")
            if f"{base}-aa" not in names:
                arm = next(a for a in self.arms if a.name == base)
                self.arms.append(arm.model_copy(update={"name": f"{base}-aa"}))
                names.append(f"{base}-aa")
        if self.repeats.mode == "adaptive":
            if len(names) < 2:
                raise FieldError(
                    ("repeats", "mode"),
                    "adaptive repeats follow discordance between arms and need at least two "
                    "arms (add one, or aa: true)",
                )
            if self.repeats.max_k <= self.trials:
                raise FieldError(("repeats", "max_k"), "must exceed trials (the first-phase count)")
        return self


# ------------------------------------------------------------------------------ tasks
class GraderSpec(BaseModel):
    """``type`` picks a registered grader; the other keys are that grader's parameters,
    validated by the grader's own model."""

    model_config = ConfigDict(extra="allow")
    type: str


class ToolCall(Strict):
    tool: str
    args: dict[str, object] = Field(default_factory=dict)


class Solution(Strict):
    """The reference solution the oracle agent runs; proves the task is solvable."""

    commands: list[str] = Field(default_factory=list, description="shell commands in the sandbox")
    actions: list[ToolCall] = Field(default_factory=list, description="environment tool calls")
    answer: str | None = Field(None, description="what the agent finally tells the user")


class Variant(Strict):
    """A meaning-preserving variant of a task, run as a paired trial with the same seed."""

    id: str
    instruction: str | None = None
    tool_order: list[str] | None = None
    distractor: str | None = None


class UserScript(Strict):
    """A scripted simulated user for conversational tasks."""

    turns: list[str] = Field(default_factory=list)
    model: ModelSettings | None = None
    persona: str | None = None
    goal: str | None = Field(
        None,
        description="the user's private goal: the agent never sees it; the user writes the "
        "opening message (a model, seeded; a script's first turn) instead of the instruction",
    )


class Task(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.:/-]+$")
    instruction: str = Field("", description="the agent's first message; optional with user.goal")
    environment: str | None = Field(None, description="environment name under environments/")
    class_: str = Field("default", alias="class")
    cluster: str | None = Field(None, description="independent unit above tasks; default: the task")
    stratum: str | None = None
    weight: float = Field(1.0, gt=0, le=MAX_WEIGHT, allow_inf_nan=False)
    setup: list[str] = Field(default_factory=list)
    network: list[str] = Field(
        default_factory=list,
        description="hosts this task's sandboxes may reach besides its environment's `network` "
        "(names, IP addresses or CIDR blocks; Docker only)",
    )
    graders: list[GraderSpec] = Field(min_length=1)
    solution: Solution | None = None
    budgets: BudgetOverride | None = None
    hidden: str | None = Field(
        None, description="dir of hidden material, copied in after the agent"
    )
    variants: list[Variant] = Field(default_factory=list)
    simulated: dict[str, Any] = Field(
        default_factory=dict, description="parameters for the simulated agent, e.g. {p: 0.7}"
    )
    user: UserScript | None = None
    must_never: bool = False
    grade_in_place: str | None = Field(
        None,
        description="why this task's graders must run in the agent's own live sandbox (a "
        "service it started, packages it installed system-wide) instead of a fresh grading "
        "sandbox; its verdicts are marked 'graded in place'",
    )

    @model_validator(mode="after")
    def _opening(self) -> Task:
        if not self.instruction and not (self.user and self.user.goal):
            raise ValueError("instruction is required (unless user.goal is given)")
        if self.user and self.user.goal and self.user.model is None and not self.user.turns:
            raise ValueError("user.goal needs user.model or user.turns to write the opening")
        return self

    @property
    def cluster_id(self) -> str:
        return self.cluster or self.id


class TaskFile(Strict):
    """A file holding several tasks under ``tasks:`` with optional shared defaults."""

    defaults: dict[str, object] = Field(default_factory=dict)
    tasks: list[dict[str, object]] = Field(min_length=1)


# ------------------------------------------------------------------------------ environments
class ImageRecipe(Strict):
    dockerfile: str | None = Field(None, description="path relative to the environment dir")
    ref: str | None = Field(None, description="an image reference, e.g. harness-base:bookworm")

    @model_validator(mode="after")
    def _one(self) -> ImageRecipe:
        if bool(self.dockerfile) == bool(self.ref):
            raise ValueError("give exactly one of 'dockerfile' or 'ref'")
        return self


def _no_parameters() -> dict[str, object]:
    """The JSON Schema of a tool that takes no arguments."""
    return {"type": "object", "properties": {}}


class ToolSpec(Strict):
    """A tool the agent may call: run as ``command`` in the sandbox, arguments as JSON on stdin."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    description: str
    parameters: dict[str, object] = Field(default_factory=_no_parameters)
    """The tool's JSON Schema, relayed to the model as written (never read here)."""
    command: str | None = Field(
        None,
        description="shell command in the sandbox; optional when the environment has a "
        "tool_server, which then serves this tool",
    )
    timeout_s: Seconds = 30.0
    terminates: bool = Field(
        False, description="calling it ends the episode (it runs, then the agent is stopped)"
    )


class StateSpec(Strict):
    """How to snapshot state: a command printing JSON, a file-system walk, or nothing."""

    kind: Literal["none", "command", "files"] = "none"
    command: str | None = None
    paths: list[str] = Field(
        default_factory=list,
        description="'files': the roots whose entries make the state; 'command': what the "
        "dump reads (copied from the agent's sandbox into a fresh grading sandbox where the "
        "dump runs; default: the whole workdir, with the environment's own files restored)",
    )
    ignore: list[str] = Field(default_factory=list, description="dotted paths, '*' wildcards")


class ToolServerSpec(Strict):
    """One long-lived process per trial serving the environment's tools (and its state) over
    JSON lines on stdin/stdout; the protocol is documented in ``harness/tools/server.py``."""

    command: str = Field(description="started once per trial in the sandbox, in the workdir")
    state: bool = Field(
        True, description="the server answers snapshot requests: the state is read from it"
    )
    startup_timeout_s: float = Field(60.0, gt=0, description="seconds to wait for 'ready'")


class EnvironmentSpec(Strict):
    name: str
    description: str = ""
    version: str = "1"
    image: ImageRecipe = Field(default_factory=lambda: ImageRecipe(ref="harness-base:latest"))
    workdir: str = "/work"
    files: str | None = Field(None, description="dir (relative) copied into the workdir")
    setup: list[str] = Field(default_factory=list)
    state: StateSpec = Field(default_factory=StateSpec)
    tools: list[ToolSpec] = Field(default_factory=list)
    policy: str | None = Field(None, description="file with the policy shown to the agent")
    network: list[str] = Field(default_factory=list, description="hosts the sandbox may reach")
    user: str | None = Field(
        None,
        description="the user agent commands run as: default the unprivileged uid 1000; "
        "'root' opts in to root (the report says so)",
    )
    tool_server: ToolServerSpec | None = Field(
        None, description="serve the tools from one process per trial instead of one per call"
    )

    @model_validator(mode="after")
    def _tool_commands(self) -> EnvironmentSpec:
        if self.tool_server is None:
            for i, tool in enumerate(self.tools):
                if not tool.command:
                    raise ValueError(f"tools.{i}.command is required without a tool_server")
        return self


@dataclass(frozen=True)
class Environment:
    """An environment spec together with the directory it was loaded from."""

    spec: EnvironmentSpec
    root: Path

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def files_dir(self) -> Path | None:
        return (self.root / self.spec.files) if self.spec.files else None


ModelSettings.model_rebuild()
