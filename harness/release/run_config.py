"""The run's stored resolved config as the release and report code read it.

A run stores its suite, tasks and environments as JSON (``Run.config``: the pydantic models'
``model_dump(mode="json")``, written by ``harness.runner``). Readers treat it as plain data so
runs recorded by older versions still answer; these TypedDicts declare the fields they read
(every one optional, as in an old or hand-built config), so a misspelt field is a type error.
A test checks each field name against the config models (``tests/release``).
"""

from __future__ import annotations

from typing import TypedDict

from harness.config.subset import SubsetDraw
from harness.release.records import GatePolicyRecord, PrimaryRecord


class StoredModel(TypedDict, total=False):
    """An arm's model settings (``ModelSettings``)."""

    name: str
    model: str
    """The model's name in configs stored by older versions."""


class StoredArm(TypedDict, total=False):
    """One arm as the suite declared it (``Arm``)."""

    name: str
    agent: str
    params: dict[str, object]
    """Free-form agent parameters, as written in the suite."""
    model: StoredModel | str | None
    """The model settings; older stored configs name the model as a plain string."""


class StoredReportSettings(TypedDict, total=False):
    """The suite's ``report:`` section (``config.release.ReportSettings``)."""

    k: list[int] | None
    cluster_key: str
    primary: PrimaryRecord | None
    confidence: float
    estimand: str
    """'superpopulation' or 'fixed-suite'."""


class StoredRepeats(TypedDict, total=False):
    """The suite's ``repeats:`` section (``config.release.Repeats``)."""

    mode: str
    """'fixed' or 'adaptive'."""
    max_k: int
    budget_trials: int | None


class StoredSuite(TypedDict, total=False):
    """The suite (``Suite``), the fields the report and release code read."""

    name: str
    description: str
    trials: int
    arms: list[StoredArm]
    budgets: dict[str, object]
    """Compared key by key between runs, never read by name."""
    report: StoredReportSettings
    variants: bool
    denominator: str
    """'failure' or 'exclude'."""
    gate: GatePolicyRecord | None
    aa: bool
    repeats: StoredRepeats


class StoredTask(TypedDict, total=False):
    """One task (``Task``); compared whole between runs, a few fields read by name."""

    instruction: str
    """The agent's first message (the viewer shows it)."""
    environment: str | None
    budgets: dict[str, object] | None
    variants: list[object]
    must_never: bool
    positive: bool | None
    """A classification-style task's truth (None: not one)."""
    graders: list[dict[str, object]]
    """Each grader's parameters, ``type`` first (a ``judge`` grader's rubric and model)."""


class StoredEnvironment(TypedDict, total=False):
    """One environment (``EnvironmentSpec`` plus where it was loaded from)."""

    version: str
    image: dict[str, object]
    root: str


class StoredConfig(TypedDict, total=False):
    """``Run.config``: the suite, its tasks by id and its environments by name."""

    suite: StoredSuite
    tasks: dict[str, StoredTask]
    environments: dict[str, StoredEnvironment]
    subset: SubsetDraw
    """The declared subset's draw (absent for a full run)."""
