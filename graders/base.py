"""The grader boundary: evidence in, verdict with reasons out.

A grader never talks to the agent. It reads the initial and final state, the trajectory,
the agent's answer and messages, and the task's expectations; a grader that must run
something (hidden tests) sets ``runs_code = True`` on its class and gets a fresh grading
sandbox holding the agent's files (``harness.grading``), never the agent's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypedDict, runtime_checkable

from pydantic import BaseModel, ConfigDict

from graders.judge_workspace import WorkView
from harness.config.models import ModelSettings, Task
from harness.sandbox.base import Sandbox
from harness.trajectory import Event


class GraderParams(BaseModel):
    """Base for each grader's parameters; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    type: str
    """The grader: answer_match, required_outputs, state_diff, trajectory, tests_script or
    module:Class."""
    name: str | None = None
    """Optional label, to tell two graders of the same type apart in evidence."""

    def needs_hidden_dir(self) -> bool:
        """Whether grading reads the task's ``hidden:`` directory (checked when the suite
        loads: a task without one is an error naming the grader's field)."""
        return False

    def models(self) -> list[ModelSettings]:
        """The model endpoints grading calls (a judge's): probed before the run with the
        arms' endpoints."""
        return []

    def judge_setup(self) -> str | None:
        """A model judge's setup hash (model, prompt, rubric, settings), pinned in the lock
        file; None for graders that are not judges."""
        return None

    def hidden_files(self) -> list[str]:
        """Paths, relative to the hidden directory, that grading runs or reads: each is
        checked when the suite loads, and again when grading (missing then: grader_error,
        never the agent's failure). A path ending in '/' names a directory."""
        return []

    def reads_workdir(self) -> bool:
        """Whether grading explores the agent's whole final work dir (a judge with workspace
        tools): it is taken out of the sandbox after the agent's turn as data, into
        ``Evidence.work``, read on the host and never run."""
        return False

    def workspace_files(self) -> list[str]:
        """Files of the agent's final work whose text grading reads (relative to the work
        dir, or absolute): taken out of its sandbox after its turn as data, with nothing run
        there, into ``Evidence.files``."""
        return []


@dataclass
class Evidence:
    task: Task
    answer: str | None = None
    messages: list[str] = field(default_factory=list)
    """Everything the agent told the user, in order (the final answer included)."""
    trajectory: list[Event] = field(default_factory=list)
    initial_state: dict[str, Any] | None = None
    final_state: dict[str, Any] | None = None
    state_ignore: list[str] = field(default_factory=list)
    """Environment-level ignore paths for state comparison."""
    sandbox: Sandbox | None = None
    """The grading sandbox (commands run as the grader), for graders that run code."""
    hidden_dir: str | None = None
    """Where the task's hidden files are in the grading sandbox (the grader's only)."""
    seed: int | None = None
    """The trial's seed (a judge seeds its samples with it where the API takes a seed)."""
    files: dict[str, str | None] = field(default_factory=dict)
    """The text of each file the graders read (``workspace_files``), by the path they gave;
    None: the agent left no regular file there."""
    work: WorkView | None = None
    """The agent's final work dir as data (``reads_workdir``): listed, read and searched
    from its archive on the host; None when no grader asked or the task has no sandbox."""


class Harm(TypedDict):
    """A forbidden action the agent took, as a path grader reports it."""

    action: str
    """The rule's label (default: its tool name)."""
    step: int
    severity: str | float
    """'low', 'medium', 'high', 'critical' or a number."""
    tool: str | None
    args: dict[str, Any] | None
    ok: bool
    """Whether the call succeeded (an attempt is a harm either way)."""


class VerdictJson(TypedDict):
    """A verdict as stored in a trial's evidence."""

    grader: str
    version: str
    role: str
    passed: bool
    score: float
    reasons: list[str]
    details: dict[str, Any]
    harms: list[Harm]


@dataclass
class Verdict:
    grader: str
    passed: bool
    score: float = 0.0
    """Partial credit in [0, 1]; equals float(passed) for all-or-nothing graders."""
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    role: Literal["outcome", "path"] = "outcome"
    harms: list[Harm] = field(default_factory=list)
    """Forbidden actions taken."""
    version: str = "1"

    def to_json(self) -> VerdictJson:
        return {
            "grader": self.grader,
            "version": self.version,
            "role": self.role,
            "passed": self.passed,
            "score": self.score,
            "reasons": self.reasons,
            "details": self.details,
            "harms": self.harms,
        }


@runtime_checkable
class Grader(Protocol):
    type_name: ClassVar[str]
    version: ClassVar[str]
    Params: ClassVar[type[GraderParams]]
    params: GraderParams

    def __init__(self, params: Any) -> None: ...

    async def grade(self, evidence: Evidence) -> Verdict: ...


@dataclass
class Combined:
    passed: bool
    score: float
    reasons: list[str]
    harms: list[Harm]


def combine(verdicts: list[Verdict]) -> Combined:
    """A task's verdict: the AND of its outcome graders, with path graders as gates.

    The score is the mean partial credit over graders, kept separate from the verdict.
    """
    passed = all(v.passed for v in verdicts) and bool(verdicts)
    score = sum(v.score for v in verdicts) / len(verdicts) if verdicts else 0.0
    reasons = [f"{v.grader}: {r}" for v in verdicts if not v.passed for r in v.reasons]
    harms = [h for v in verdicts for h in v.harms]
    return Combined(passed=passed, score=score, reasons=reasons, harms=harms)
