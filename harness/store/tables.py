"""The store's tables: one row per run, per trial, per attempt, per trajectory event.

Each row is declared once. ``TrialRow``, ``AttemptRow`` and ``trajectory.Event`` are the
records the trial lifecycle builds (validated, ``extra="forbid"``: a misspelt field is an
error where the record is built); the tables below inherit their fields and add only the
keys the database assigns. Writers, the report's queries and the viewer name columns
through these classes, never through free-standing strings.

Trials are never summarised away: stats and reports read these rows and nothing else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from pydantic import ConfigDict
from sqlalchemy import JSON, BigInteger, Column, LargeBinary, Table, UniqueConstraint
from sqlalchemy.orm import QueryableAttribute
from sqlmodel import Field, SQLModel

from harness.config.overrides import Overrides
from harness.text_columns import StoredString, StoredText
from harness.trajectory import Event


class SchemaVersion(SQLModel, table=True):
    __tablename__ = "schema_version"
    version: int = Field(primary_key=True)
    applied_at: datetime


class Run(SQLModel, table=True):
    __tablename__ = "runs"
    id: str = Field(primary_key=True)
    suite_name: str = Field(index=True)
    suite_path: str
    description: str = ""
    config_hash: str
    harness_version: str
    config: dict[str, object] = Field(sa_column=Column(JSON))
    """The resolved suite (tasks and environments included), as validated."""
    overrides: Overrides = Field(default_factory=Overrides, sa_column=Column(JSON))
    """The ``harness run`` flags given; a resume loads the suite with them again."""
    seed: int = Field(sa_column=Column(BigInteger, nullable=False))
    trials_per_task: int
    arms: list[str] = Field(sa_column=Column(JSON))
    sandbox: str
    image_ids: dict[str, str | None] = Field(default_factory=dict, sa_column=Column(JSON))
    """Environment name → the pinned image id every trial of its tasks used (None: none)."""
    jobs_planned: int = 0
    status: str = "running"
    """running | finished | interrupted | failed"""
    host: str = ""
    pid: int = 0
    started_at: datetime
    finished_at: datetime | None = None


class _Record(SQLModel):
    """A row as the trial builds it: validated, unknown fields refused."""

    model_config = ConfigDict(extra="forbid")  # type: ignore[assignment]


class TrialKey(_Record):
    """The columns that name a trial: shared by its final row and its attempt rows."""

    run_id: str = Field(index=True, foreign_key="runs.id")
    arm: str
    task_id: str
    variant: str = ""
    """Variant id for robustness trials; '' for the original task."""
    trial_index: int


class TrialRow(TrialKey):
    """One finished trial, as the lifecycle produces it and the ``trials`` table stores it."""

    seed: int = Field(sa_type=BigInteger, sa_column_kwargs={"nullable": False})
    """63-bit seed derived from (suite seed, task id, trial index); replays the trial."""
    cluster: str
    task_class: str
    stratum: str | None = None
    weight: float = 1.0
    status: str
    """passed | failed | infra_error | grader_error | harness_error"""
    passed: bool | None = None
    """None when unresolved (no verdict)."""
    score: float | None = None
    reason: str = Field(default="", sa_type=StoredText)
    evidence: dict[str, object] = Field(default_factory=dict, sa_type=JSON)
    """Grader verdicts, the agent's failure, its info and the harms found."""
    answer: str | None = Field(default=None, sa_type=StoredText)
    confidence: float | None = None
    """The agent's stated confidence in [0, 1]; None when it gave none."""
    tokens_in: int | None = None
    """Prompt tokens (cached ones included); None when a model call reported no usage:
    unknown is never stored as zero."""
    tokens_cached: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    """US dollars; None when a price or a call's usage was unknown."""
    latency_s: float = 0.0
    """Seconds from the start of the attempt to the agent's end."""
    judge_calls: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """Model calls the trial's judges made (kept apart from the agent's: ``model_calls``)."""
    judge_tokens_in: int | None = None
    """Prompt tokens of the judges' calls (None: a call reported no usage, or no judge)."""
    judge_tokens_out: int | None = None
    judge_cost_usd: float | None = None
    """US dollars the judges spent (None: a price or a call's usage was unknown, or no
    judge); never counted in the agent's ``cost_usd`` or its budgets."""
    steps: int = 0
    model_calls: int = 0
    malformed_tool_calls: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """Tool calls naming an unknown tool or carrying non-object arguments."""
    image_id: str | None = None
    """The image the trial's sandbox ran: the environment's pinned image, or for a ready-made
    agent that image plus the agent's CLI (one layer more)."""
    task_image_id: str | None = None
    """The environment's pinned image underneath (``runs.image_ids``): what pairs trials of
    two arms on one task, whatever CLI either arm added on top."""
    attempts: int = 1
    harm_severity: float = 0.0
    """Largest severity of the harms found (low 1, medium 2, high 3, critical 4); 0 = none."""
    grader_versions: dict[str, str] = Field(default_factory=dict, sa_type=JSON)
    """Grader name → the version of its rules that gave the verdict."""
    error: str | None = Field(default=None, sa_type=StoredText)
    """Traceback of an unresolved trial."""
    failure_kind: str | None = Field(default=None, sa_type=StoredString)
    """Why a failed trial failed when the agent caused it (``timeout``, ``invalid_agent_result``,
    ``agent_error``, ``broke_environment``, ``killed_own_sandbox``, ``oom``, a budget...);
    None for a graded verdict and for unresolved trials (their status says why)."""
    started_at: datetime
    finished_at: datetime


class Trial(TrialRow, table=True):
    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("run_id", "arm", "task_id", "trial_index", "variant", name="uq_trial"),
    )
    id: int | None = Field(default=None, primary_key=True)


class AttemptRow(TrialKey):
    """One try at running a trial; only an infrastructure crash causes another."""

    attempt: int
    outcome: str
    """'ok', or the error kind that ended this attempt (infra_error, interrupted, ...)."""
    error: str | None = Field(default=None, sa_type=StoredText)
    tokens_in: int | None = None
    """Tokens this attempt's model calls reported (None: a call reported no usage, or the
    attempt never got as far as its agent); discarded attempts keep theirs too."""
    tokens_cached: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    """US dollars this attempt spent (None when a price or a call's usage is unknown)."""
    started_at: datetime
    finished_at: datetime


class Attempt(AttemptRow, table=True):
    __tablename__ = "attempts"
    id: int | None = Field(default=None, primary_key=True)


class InFlight(TrialKey, table=True):
    """A trial being run now: written when it is handed to the executor, deleted with its
    final row (or its interrupted attempts). One left behind means the driver died during
    it; the resume records that attempt (``driver_died``) and deletes the row."""

    __tablename__ = "trials_in_flight"
    __table_args__ = (
        UniqueConstraint("run_id", "arm", "task_id", "trial_index", "variant", name="uq_in_flight"),
    )
    id: int | None = Field(default=None, primary_key=True)
    started_at: datetime


class HumanLabel(SQLModel, table=True):
    """A person's label of one trial, beside the trial and never over its verdict: pass or
    fail overall (``criterion`` empty) or of one judge criterion, with who, when and a note."""

    __tablename__ = "human_labels"
    __table_args__ = (UniqueConstraint("trial_id", "criterion", "labeller", name="uq_human_label"),)
    id: int | None = Field(default=None, primary_key=True)
    trial_id: int = Field(index=True, foreign_key="trials.id")
    criterion: str = ""
    """The judge criterion labelled; '' for the trial's outcome as a whole."""
    passed: bool
    labeller: str = Field(sa_type=StoredString)
    """Who labelled it (a name or address). A person's newer label of the same trial and
    criterion replaces theirs here; the replaced one moves to ``human_labels_replaced``."""
    note: str = Field(default="", sa_type=StoredText)
    source: str = "viewer"
    """viewer, or the labels file it was imported from."""
    labelled_at: datetime


class PairwiseJudgement(SQLModel, table=True):
    """One pairwise judge call: two arms' trials of one task and trial index, shown in one
    order (``harness pairwise``). ``verdict`` names the arm, not the position. Within a run
    both trials are ``run_id``'s; across runs (``harness pairwise RUN_A:ARM RUN_B:ARM``)
    ``trial_b`` is ``run_b``'s. The trial ids identify a judgement either way."""

    __tablename__ = "pairwise_judgements"
    __table_args__ = (
        UniqueConstraint("setup", "trial_a", "trial_b", "shown_first", name="uq_pairwise"),
    )
    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, foreign_key="runs.id")
    setup: str = Field(sa_type=StoredString)
    """The judge setup's hash (``PairwiseJudgeSetup.setup_hash``)."""
    judge_model: str = Field(sa_type=StoredString)
    arm_a: str
    arm_b: str
    task_id: str
    variant: str = ""
    trial_index: int
    trial_a: int = Field(foreign_key="trials.id")
    """arm_a's trial."""
    trial_b: int = Field(foreign_key="trials.id")
    run_b: str | None = Field(default=None, index=True, foreign_key="runs.id")
    """trial_b's run when it is not ``run_id`` (a judgement across runs); None within a run."""
    shown_first: str
    """'A' (arm_a's response shown first) or 'B'."""
    verdict: str
    """'A' (arm_a's response is better), 'B', 'tie', or 'unresolved' (the reply named none)."""
    reason: str = Field(default="", sa_type=StoredText)
    """The judge's stated reason, or why the comparison is unresolved."""
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0
    judged_at: datetime


class ReplacedLabel(SQLModel, table=True):
    """A person's earlier label of a trial (or criterion) that their newer one replaced: kept
    as history, shown in the viewer, read by no statistic (the newest label counts)."""

    __tablename__ = "human_labels_replaced"
    id: int | None = Field(default=None, primary_key=True)
    trial_id: int = Field(index=True, foreign_key="trials.id")
    criterion: str = ""
    passed: bool
    labeller: str = Field(sa_type=StoredString)
    note: str = Field(default="", sa_type=StoredText)
    source: str = "viewer"
    labelled_at: datetime
    replaced_at: datetime


class TrajectoryEvent(Event, table=True):
    """A stored ``trajectory.Event``: the same fields, plus the trial it belongs to."""

    __tablename__ = "trajectory_events"
    id: int | None = Field(default=None, primary_key=True)
    trial_id: int = Field(index=True, foreign_key="trials.id")


class Blob(SQLModel, table=True):
    """Full tool results too large for the trajectory preview, by sha256."""

    __tablename__ = "blobs"
    sha256: str = Field(primary_key=True)
    data: bytes = Field(sa_column=Column(LargeBinary))


class AnchorFit(SQLModel, table=True):
    """A 2PL fit of one suite's tasks (``harness anchors fit``), versioned per suite: the
    tasks' a and b, their quality, and the runs and tasks it was fitted from."""

    __tablename__ = "anchor_fits"
    __table_args__ = (UniqueConstraint("suite_name", "version", name="uq_anchor_fit"),)
    id: int | None = Field(default=None, primary_key=True)
    suite_name: str = Field(index=True)
    version: int
    created_at: datetime
    fit: dict[str, Any] = Field(sa_column=Column(JSON))
    """The fit record (``harness.config.subset.FitRecord`` and its quality)."""


def table_of(model: type[SQLModel]) -> Table:
    """The SQLAlchemy table a table model maps (SQLModel sets it; its stubs do not say so)."""
    return cast(Table, model.__table__)  # type: ignore[attr-defined]


def column_name(attribute: Any) -> str:
    """A column's name from a table model's attribute (``Trial.cost_usd``), so a misspelt
    column fails at import and under mypy instead of in (or silently past) a query."""
    return cast(QueryableAttribute[Any], attribute).key
