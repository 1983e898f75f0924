"""The parts of Inspect AI's eval log (JSON, format version 2) that ``harness export --format
inspect`` writes, declared once so the writer's field names are checked.

Written from Inspect's published log schema (``EvalLog`` and what it holds); only the fields
the harness fills are declared. Field order here is the order the writer emits them.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class ToolCall(TypedDict):
    id: str
    function: str
    arguments: dict[str, object]
    """The call's arguments as the agent sent them (free-form)."""
    type: Literal["function"]


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str
    source: NotRequired[Literal["input"]]
    """Present on the task's instruction, absent on the simulated user's turns."""


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str
    source: Literal["generate"]
    tool_calls: NotRequired[list[ToolCall]]


class ToolCallError(TypedDict):
    type: str
    message: str


class ToolMessage(TypedDict):
    role: Literal["tool"]
    content: str
    tool_call_id: str
    function: str
    error: NotRequired[ToolCallError]


Message = UserMessage | AssistantMessage | ToolMessage


class ModelUsage(TypedDict):
    """One sample's token use and cost (US dollars; None when a price was unknown)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tokens_cache_read: int | None
    total_cost: float | None


class TokenTotals(TypedDict):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class RunUsage(TokenTotals):
    """The whole arm's usage in the log's stats (cost None when any trial's was unknown)."""

    total_cost: float | None


class ScoreMetadata(TypedDict):
    score: float | None
    graders: object
    """Each grader's verdict as stored in the trial's evidence."""


class Score(TypedDict):
    value: Literal["C", "I"]
    answer: str | None
    explanation: str
    metadata: ScoreMetadata


class JudgeScoreMetadata(TypedDict):
    """One judge criterion's verdict (``harness.export.inspect_scores``)."""

    criterion: str
    scale_value: float | None
    """The criterion's value on its scale (1.0/0.0 for binary; the mean of the samples)."""
    votes: list[bool]
    disagreed: bool
    model: str
    api: str
    setup: str
    """The judge setup's hash (model, prompt template, rubric, settings)."""
    samples: int
    usage: dict[str, object]
    """The judge's calls, tokens and cost for the whole verdict (US dollars)."""
    tools: NotRequired[list[dict[str, object]]]
    """A judge with workspace tools: per sample its tool calls (each with the start of its
    reply), steps, bytes read and the caps it hit."""


class JudgeScore(TypedDict):
    value: Literal["C", "I"]
    answer: None
    explanation: str
    """The judge's stated reasons for the criterion."""
    metadata: JudgeScoreMetadata


class LabelHistory(TypedDict):
    """One earlier label of the same person and criterion, which a newer one replaced."""

    value: Literal["C", "I"]
    explanation: str
    """Its note."""
    labelled_at: str
    replaced_at: str
    source: str


class LabelMetadata(TypedDict):
    labeller: str
    criterion: str
    """'' for a label of the trial as a whole."""
    labelled_at: str
    source: str
    """viewer, or the labels file it was imported from."""
    history: list[LabelHistory]
    """The labels this person's label replaced, oldest first (kept in the store; read by
    no statistic)."""


class LabelScore(TypedDict):
    """A person's label of the trial (or of one judge criterion), beside the verdict."""

    value: Literal["C", "I"]
    answer: None
    explanation: str
    """The labeller's note."""
    metadata: LabelMetadata


class SampleError(TypedDict):
    message: str
    traceback: str
    traceback_ansi: str


class Output(TypedDict):
    model: str
    choices: list[object]


class SampleMetadata(TypedDict):
    """The harness's own fields of a trial."""

    status: str
    cluster: str
    task_class: str
    seed: int
    image_id: str | None
    attempts: int
    steps: int
    judge_calls: NotRequired[int]
    """Judged trials: the judge's calls and cost (US dollars), metered apart from the agent."""
    judge_cost_usd: NotRequired[float | None]


class Sample(TypedDict):
    id: str
    epoch: int
    input: str
    target: str
    messages: list[Message]
    output: Output
    metadata: SampleMetadata
    model_usage: dict[str, ModelUsage]
    started_at: str | None
    completed_at: str | None
    total_time: float
    scores: NotRequired[dict[str, Score | JudgeScore | LabelScore]]
    """``harness`` (the verdict), then per judge criterion and per human label."""
    error: NotRequired[SampleError]


class Dataset(TypedDict):
    name: str
    samples: int
    sample_ids: list[str]


class EvalConfig(TypedDict):
    epochs: int


class EvalMetadata(TypedDict):
    harness_arm: str
    config_hash: str


class EvalSpec(TypedDict):
    eval_id: str
    run_id: str
    created: str | None
    task: str
    task_id: str
    task_version: int
    dataset: Dataset
    model: str
    config: EvalConfig
    metadata: EvalMetadata


class PlanStep(TypedDict):
    solver: str
    params: object
    """The arm's agent parameters as stored with the run."""


class Plan(TypedDict):
    name: str
    steps: list[PlanStep]


class Metric(TypedDict):
    name: str
    value: float
    params: dict[str, object]


class EvalScore(TypedDict):
    name: str
    scorer: str
    params: dict[str, object]
    metrics: dict[str, Metric]


class Results(TypedDict):
    total_samples: int
    completed_samples: int
    scores: list[EvalScore]


class Stats(TypedDict):
    started_at: str | None
    completed_at: str | None
    model_usage: dict[str, RunUsage]


class EvalLog(TypedDict):
    """One log file: one arm of a run, evaluated on the run's tasks."""

    version: int
    status: str
    eval: EvalSpec
    plan: Plan
    results: Results
    stats: Stats
    samples: list[Sample]
