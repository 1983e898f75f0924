"""Typed configuration: suites, arms and tasks (environments re-exported from ``environment``).

Unknown keys are errors naming the field, never ignored. Defaults live here, not in the CLI.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
    parse_bytes,
)
from harness.config.environment import Environment as Environment
from harness.config.environment import EnvironmentSpec as EnvironmentSpec
from harness.config.environment import ImageRecipe as ImageRecipe
from harness.config.environment import StateSpec as StateSpec
from harness.config.environment import ToolServerSpec as ToolServerSpec
from harness.config.environment import ToolSpec as ToolSpec
from harness.config.pairwise import SuitePairwise
from harness.config.release import GatePolicy, Repeats, ReportSettings
from harness.config.roles import decide_roles
from harness.config.subset import Subset
from harness.config.task_parts import IN_PLACE_GRADING
from harness.config.task_parts import Grading as Grading
from harness.config.task_parts import Solution as Solution
from harness.config.task_parts import TaskStep as TaskStep
from harness.config.task_parts import ToolCall as ToolCall


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
    """A task's own budgets: each key given replaces the suite's for that task."""

    max_steps: int | None = Field(None, strict=True, ge=1, le=MAX_STEPS)
    """overrides the suite's budgets.max_steps for this task"""
    max_tokens: int | None = Field(None, strict=True, ge=1, le=MAX_TOKENS)
    """overrides the suite's budgets.max_tokens for this task"""
    max_cost_usd: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    """overrides the suite's budgets.max_cost_usd for this task"""
    timeout_s: Seconds | None = None
    """overrides the suite's budgets.timeout_s for this task (seconds)"""


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
    """Limits of each sandbox, and (memory, pids) of a `module:Class` agent's own process."""

    memory: str = Field(
        "1g",
        pattern=r"^[0-9]+(\.[0-9]+)?[bkmgtBKMGT]?[bB]?$",
        description="bytes, or a number with a unit: 512m, 1g",
    )
    disk: str = Field(
        "1g",
        pattern=r"^[0-9]+(\.[0-9]+)?[bkmgtBKMGT]?[bB]?$",
        description="each trial's disk quota, for every place its agent may write (work "
        "dir, /tmp) together: a size-limited tmpfs, so it also counts against memory; at "
        "least 1m; enforced when the harness runs as root",
    )
    pids: int = Field(256, strict=True, ge=16, le=1_000_000)
    """most processes and threads the sandbox may hold at once"""
    cpus: float = Field(1.0, gt=0, le=1024, allow_inf_nan=False)
    """CPUs the sandbox may use (fractions allowed: 0.5)"""

    @field_validator("disk")
    @classmethod
    def _disk_at_least_1m(cls, value: str) -> str:
        if parse_bytes(value) < 1 << 20:  # a tmpfs of size 0 would have no limit at all
            raise ValueError(f"disk quota {value!r} is below 1m")
        return value


class ModelSettings(Strict):
    """An OpenAI-compatible endpoint. The API key is read from ``api_key_env`` at run time
    and is never stored, logged or passed into a sandbox."""

    name: str
    """the model name sent to the endpoint; ${VAR} and ${VAR:-default} are expanded"""
    base_url: str = "https://api.openai.com/v1"
    """the endpoint's base URL (OpenAI-compatible, or Anthropic with api: anthropic); ${VAR}
    and ${VAR:-default} are expanded"""
    api_key_env: str | None = "OPENAI_API_KEY"
    """the environment variable holding the API key (read at run time, never stored); null: no
    key"""
    temperature: float | None = Field(None, ge=0, le=10, allow_inf_nan=False)
    """sampling temperature sent with every call; null: the endpoint's default"""
    max_tokens: int | None = Field(None, strict=True, ge=1, le=MAX_TOKENS)
    """most output tokens per call; null: the endpoint's default"""
    timeout_s: Seconds = 120.0
    """seconds one call may take"""
    max_retries: int = Field(4, strict=True, ge=0, le=MAX_ATTEMPTS)
    """retries of a failed call (connection errors, 429, 5xx) before it counts as
    infrastructure"""
    extra: dict[str, object] = Field(default_factory=dict)
    """extra fields merged into every request body (e.g. {top_p: 0.9})"""
    price: Price | None = None
    """what tokens cost, for cost budgets and reports; null: cost unknown"""
    api: Literal["openai", "anthropic"] = Field(
        "openai",
        description="the upstream's API kind: openai (chat completions, Responses; Bearer key) "
        "or anthropic (Messages; x-api-key). The command agent's proxy serves that kind only.",
    )


class Price(Strict):
    """US dollars per million tokens."""

    input: Money
    """dollars per million prompt tokens"""
    cached_input: Money | None = None
    """dollars per million prompt tokens served from the cache; default the input price"""
    output: Money
    """dollars per million completion tokens"""
    cache_write: Money | None = Field(
        None, description="prompt tokens written to the cache; default the input price"
    )


class Arm(Strict):
    """One configuration under test: an agent, its parameters and its model."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    """the arm's name in reports and comparisons (letters, digits, '_', '.', '-')"""
    agent: str = Field(description="registered agent name or 'module:Class'")
    params: dict[str, object] = Field(
        default_factory=dict, description="the agent's parameters, checked against its Params"
    )
    model: ModelSettings | None = None
    """the model endpoint the agent uses (llm, command and the ready-made agents)"""


class Suite(Strict):
    """A suite file: what to run, how often, against which arms, and where to store it."""

    name: str
    """the suite's name; runs are grouped by it (harness history SUITE)"""
    description: str = ""
    """what the suite measures, shown in reports"""
    seed: Seed = 0
    trials: Count = Field(1, description="trials per task per arm")
    tasks: list[str] = Field(min_length=1, description="task files or globs, relative to the suite")
    environments_dir: str | None = Field(
        None, description="where environments live; default: nearest 'environments/' upward"
    )
    arms: list[Arm] = Field(min_length=1)
    """the configurations under test"""
    concurrency: int = Field(4, strict=True, ge=1, le=MAX_CONCURRENCY)
    """trials running at once"""
    sandbox: str = Field(
        "auto",
        description="auto (docker when a daemon answers, else bwrap), docker, bwrap, "
        "unsafe-local (no isolation), faulty (fault injection), or module:Class",
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
    """per-trial limits (each task may override them)"""
    retries: Retries = Field(default_factory=Retries)
    """infrastructure-only retries"""
    limits: Limits = Field(default_factory=Limits)
    """resources of each sandbox"""
    store: str | None = Field(
        None, description="SQLAlchemy URL; default sqlite:///.harness/harness.db"
    )
    store_outage_s: float = Field(
        60.0,
        ge=0,
        le=86_400,
        allow_inf_nan=False,
        exclude=True,  # how long to wait for the store, not what is measured: outside the hash
        description="seconds the run waits (backing off) for a store that stops answering "
        "before it stops with exit 5; no new trial starts meanwhile",
    )
    report: ReportSettings = Field(default_factory=ReportSettings)
    """how the report reads the results"""
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
    """fixed or adaptive trials per task"""
    subset: Subset | None = Field(None, description="run a declared subset (docs/suite.md)")
    allow_internet: bool = Field(
        False,
        description="let tasks that ask for open egress (`internet: true`, theirs or their "
        "grading's) reach the internet; without it such a suite is refused at load "
        "(`harness run --allow-internet` sets it for one run)",
    )

    pairwise: SuitePairwise | None = Field(
        None,
        description="a pairwise judge that compares the run's arms when `harness run` ends: "
        "judge (a file or inline) and optionally arms",
    )

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
        self._check_pairwise(names)
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

    def _check_pairwise(self, names: list[str]) -> None:
        """The pairwise block's arms are the suite's, and there are two to compare."""
        if self.pairwise is None:
            return
        for i, arm in enumerate(self.pairwise.arms or []):
            if arm not in names:
                raise FieldError(
                    ("pairwise", "arms", i), f"names unknown arm '{arm}' (arms: {', '.join(names)})"
                )
        if self.pairwise.arms is None and len(names) < 2:
            raise FieldError(("pairwise",), "a pairwise judge compares arms: the suite has one")


# ------------------------------------------------------------------------------ tasks
class GraderSpec(BaseModel):
    """``type`` picks a registered grader; the other keys are that grader's parameters,
    validated by the grader's own model."""

    model_config = ConfigDict(extra="allow")
    type: str


class Variant(Strict):
    """A meaning-preserving variant of a task, run as a paired trial with the same seed."""

    id: str
    """the variant's id, unique within the task"""
    instruction: str | None = None
    """the reworded instruction (same meaning); default the task's"""
    tool_order: list[str] | None = None
    """the order the tools are offered in; default the environment's"""
    distractor: str | None = None
    """text appended to every successful tool result"""


class UserScript(Strict):
    """A scripted simulated user for conversational tasks."""

    turns: list[str] = Field(default_factory=list)
    """the scripted user's messages, in order (without model)"""
    model: ModelSettings | None = None
    """a model that plays the user (with persona and goal)"""
    persona: str | None = None
    """how the simulated user behaves (prompt for its model)"""
    goal: str | None = Field(
        None,
        description="the user's private goal: the agent never sees it; the user writes the "
        "opening message (a model, seeded; a script's first turn) instead of the instruction",
    )


class Task(Strict):
    """One problem with its success criteria. Its id is unique across the suite; its trials
    are scored by its graders; its cluster is the independent unit intervals resample."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.:/-]+$")
    """unique across the suite; letters, digits and _ . : / -"""
    instruction: str = Field("", description="the agent's first message; optional with user.goal")
    environment: str | None = Field(None, description="environment name under environments/")
    class_: str = Field("default", alias="class")
    """the task's class: report slices and the gate's must_never classes"""
    cluster: str | None = Field(None, description="independent unit above tasks; default: the task")
    stratum: str | None = None
    """stratum for stratified estimates; default none"""
    weight: float = Field(1.0, gt=0, le=MAX_WEIGHT, allow_inf_nan=False)
    """the task's weight in weighted estimates"""
    setup: list[str] = Field(default_factory=list)
    """shell commands run in the sandbox before the agent, after the environment's"""
    network: list[str] = Field(
        default_factory=list,
        description="hosts this task's sandboxes may reach besides its environment's `network` "
        "(names, IP addresses or CIDR blocks; Docker only)",
    )
    internet: bool = Field(
        False,
        description="the agent's sandbox gets open egress (the internet; Docker only); needs "
        "the suite's allow_internet",
    )
    graders: list[GraderSpec] = Field(min_length=1)
    """how the trial is judged: the verdict is the AND of these"""
    solution: Solution | None = None
    """the reference solution the oracle agent runs (harness validate)"""
    budgets: BudgetOverride | None = None
    """this task's overrides of the suite's budgets"""
    hidden: str | None = Field(
        None, description="dir of hidden material, copied in after the agent"
    )
    variants: list[Variant] = Field(default_factory=list)
    """meaning-preserving variants, run paired when the suite sets variants: true"""
    simulated: dict[str, Any] = Field(
        default_factory=dict, description="parameters for the simulated agent, e.g. {p: 0.7}"
    )
    user: UserScript | None = None
    """a simulated user for conversational tasks"""
    must_never: bool = False
    """any failure of the candidate on this task blocks the release (gate)"""
    positive: bool | None = None
    """a classification-style task's truth: true when the right answer is the positive class
    (flag, escalate), false when negative; the report adds precision, recall, F1, specificity"""
    grade_in_place: str | None = Field(
        None,
        description="why this task's graders must run in the agent's own live sandbox (a "
        "service it started, packages it installed system-wide) instead of a fresh grading "
        "sandbox; its verdicts are marked 'graded in place'",
    )
    grading: Grading = Field(default_factory=Grading)
    """where graders that run code run (environment, network, privileges, what is copied)"""
    steps: list[TaskStep] = Field(default_factory=list)
    """a multi-step task: its steps, run in order in one sandbox, each graded as the task is
    (in place, or in a fresh grading sandbox) unless the step says otherwise"""
    step_reward: Literal["mean", "final"] = "mean"
    """a multi-step trial's score: the mean of its steps' rewards (a step not reached: 0),
    or the last step's; it passes when every step passes"""

    @model_validator(mode="after")
    def _opening(self) -> Task:
        if not self.instruction and not (self.user and self.user.goal):
            raise ValueError("instruction is required (unless user.goal is given)")
        if self.user and self.user.goal and self.user.model is None and not self.user.turns:
            raise ValueError("user.goal needs user.model or user.turns to write the opening")
        if self.steps and self.environment is None:
            raise FieldError(
                ("steps",),
                "a multi-step task runs its steps in one sandbox: it needs an environment",
            )
        for i, step in enumerate(self.steps):
            own = step.grading.model_fields_set if step.grading is not None else set()
            if step.grade_in_place is not None and (given := sorted(own - IN_PLACE_GRADING)):
                raise FieldError(
                    ("steps", i, "grading", given[0]),
                    "a step graded in place has no grading sandbox of its own: of grading, "
                    "only network and internet apply (drop grade_in_place or this setting)",
                )
        given = sorted(self.grading.model_fields_set - IN_PLACE_GRADING)
        if self.grade_in_place is not None and given:
            raise FieldError(
                ("grading", given[0]),
                "a task graded in place has no grading sandbox of its own: its grading runs "
                "in the agent's sandbox, where of grading only network and internet apply "
                "(drop grade_in_place or this setting)",
            )
        return self

    @property
    def cluster_id(self) -> str:
        return self.cluster or self.id


class TaskFile(Strict):
    """A file holding several tasks under ``tasks:`` with optional shared defaults."""

    defaults: dict[str, object] = Field(default_factory=dict)
    """keys every task of the file starts from (nested mappings merge)"""
    tasks: list[dict[str, object]] = Field(min_length=1)
    """the tasks (each a Task)"""


ModelSettings.model_rebuild()
