"""The store's tables: one row per run, per trial, per attempt, per trajectory event.

Trials are never summarised away: stats and reports read these rows and nothing else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


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
    config: dict[str, Any] = Field(sa_column=Column(JSON))
    """The resolved suite (tasks and environments included), as validated."""
    overrides: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    seed: int = Field(sa_column=Column(BigInteger, nullable=False))
    trials_per_task: int
    arms: list[str] = Field(sa_column=Column(JSON))
    sandbox: str
    image_ids: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    jobs_planned: int = 0
    status: str = "running"
    """running | finished | interrupted | failed"""
    host: str = ""
    pid: int = 0
    started_at: datetime
    finished_at: datetime | None = None


class Trial(SQLModel, table=True):
    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("run_id", "arm", "task_id", "trial_index", "variant", name="uq_trial"),
    )
    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, foreign_key="runs.id")
    arm: str
    task_id: str
    variant: str = ""
    trial_index: int
    seed: int = Field(sa_column=Column(BigInteger, nullable=False))
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
    reason: str = Field(default="", sa_column=Column(Text))
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    answer: str | None = Field(default=None, sa_column=Column(Text))
    confidence: float | None = None
    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    """US dollars; None when a price was unknown."""
    latency_s: float = 0.0
    steps: int = 0
    model_calls: int = 0
    image_id: str | None = None
    attempts: int = 1
    harm_severity: float = 0.0
    grader_versions: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    error: str | None = Field(default=None, sa_column=Column(Text))
    started_at: datetime
    finished_at: datetime


class Attempt(SQLModel, table=True):
    __tablename__ = "attempts"
    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, foreign_key="runs.id")
    arm: str
    task_id: str
    variant: str = ""
    trial_index: int
    attempt: int
    outcome: str
    """'ok', or the error kind that ended this attempt (infra_error, interrupted, ...)."""
    error: str | None = Field(default=None, sa_column=Column(Text))
    started_at: datetime
    finished_at: datetime


class TrajectoryEvent(SQLModel, table=True):
    __tablename__ = "trajectory_events"
    id: int | None = Field(default=None, primary_key=True)
    trial_id: int = Field(index=True, foreign_key="trials.id")
    step: int
    kind: str
    tool: str | None = None
    args: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    content: str | None = Field(default=None, sa_column=Column(Text))
    ok: bool = True
    blob_ref: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    ts: float = 0.0


class Blob(SQLModel, table=True):
    """Full tool results too large for the trajectory preview, by sha256."""

    __tablename__ = "blobs"
    sha256: str = Field(primary_key=True)
    data: bytes = Field(sa_column=Column(LargeBinary))
