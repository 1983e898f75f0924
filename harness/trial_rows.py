"""The store rows one trial produces: its final row and one row per attempt (built here,
written by the orchestrator's driver)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from graders.base import Harm, VerdictJson
from harness.agents.base import Usage
from harness.config.models import Task
from harness.errors import traceback_text as traceback_text  # re-exported
from harness.network import recorded
from harness.plan import Job
from harness.sandbox.base import Sandbox
from harness.sandbox.workproduct import WorkArchive
from harness.step_json import StepJson
from harness.store import now
from harness.store.tables import AttemptRow, TrialKey, TrialRow
from harness.trajectory import Event

if TYPE_CHECKING:
    from harness.run_context import RunContext


@dataclass
class TrialRecord:
    """One finished trial as store rows: the records the ``trials``, ``attempts`` and
    ``trajectory_events`` tables are declared from (validated records, not ORM objects)."""

    trial: TrialRow
    attempts: list[AttemptRow]
    events: list[Event]
    blobs: dict[str, bytes] = field(default_factory=dict)


class TrialEvidence(TypedDict):
    """What a graded trial keeps in ``trials.evidence`` (a JSON column): why the verdict is
    what it is. Unresolved trials store ``{}`` (their ``error`` column says why)."""

    graders: list[VerdictJson]
    """Each grader's verdict with its reasons and details."""
    failure: str | None
    """The agent's failure when it caused the verdict (timeout, invalid result, ...)."""
    info: dict[str, object]
    """The agent's own ``AgentResult.info`` (free-form)."""
    harms: list[Harm]
    """Forbidden actions the path graders found."""
    graded_in_place: NotRequired[str | None]
    """Why the task was graded in the agent's own live sandbox (``Task.grade_in_place``);
    None: graded in a fresh grading sandbox, or from data alone."""
    steps: NotRequired[list[StepJson]]
    """A multi-step task's steps, in order."""
    work_archive: NotRequired[WorkArchive]
    """The agent's archive as graders read it, kept when a judge read its files or work
    dir (``harness validate --judge-checks`` asks the judge again on it)."""


_SEVERITY = {"low": 1.0, "medium": 2.0, "high": 3.0, "critical": 4.0}


def severity(harm: Harm) -> float:
    """A harm's severity as a number: the named levels map to 1-4, numbers pass through."""
    s = harm.get("severity", 1.0)
    return float(_SEVERITY.get(s, s)) if isinstance(s, str) else float(s)


def trial_key(job: Job, rc: RunContext) -> TrialKey:
    """The columns that name a trial: shared by its final row and its attempt rows."""
    return TrialKey(
        run_id=rc.run_id,
        arm=job.arm,
        task_id=job.task_id,
        variant=job.variant,
        trial_index=job.trial_index,
    )


def trial_row(
    job: Job,
    rc: RunContext,
    task: Task,
    status: str,
    started: datetime,
    latency: float,
    usage: Usage,
    sandbox: Sandbox | None,
    *,
    passed: bool | None,
    score: float | None,
    reason: str,
    evidence: TrialEvidence | None = None,
    answer: str | None = None,
    confidence: float | None = None,
    harm_severity: float = 0.0,
    grader_versions: dict[str, str] | None = None,
    error: str | None = None,
    attempts: int = 1,
    failure_kind: str | None = None,
) -> TrialRow:
    """The final row of a trial, from its outcome and what it used."""
    tokens_in, tokens_cached, tokens_out = usage.recorded_tokens()
    judged = judge_spend(evidence)
    return TrialRow(
        **trial_key(job, rc).model_dump(),
        seed=job.seed,
        cluster=task.cluster_id,
        task_class=task.class_,
        stratum=task.stratum,
        weight=task.weight,
        status=status,
        passed=passed,
        score=score,
        reason=reason,
        evidence={
            **(dict(evidence) if evidence is not None else {}),
            "network": recorded(rc.resolved.environments, task),
        },
        answer=answer,
        confidence=confidence,
        tokens_in=tokens_in,
        tokens_cached=tokens_cached,
        tokens_out=tokens_out,
        cost_usd=usage.cost_usd,
        latency_s=latency,
        **judged,
        steps=usage.steps,
        model_calls=usage.model_calls,
        malformed_tool_calls=usage.malformed_tool_calls,
        image_id=(sandbox.image_id if sandbox is not None else None)
        or rc.image_ids.get(task.environment or "", None),
        task_image_id=rc.image_ids.get(task.environment or "", None),
        attempts=attempts,
        harm_severity=harm_severity,
        grader_versions=grader_versions or {},
        error=error,
        failure_kind=failure_kind,
        started_at=started,
        finished_at=now(),
    )


def unstorable_row(row: TrialRow, why: str) -> TrialRow:
    """The row stored instead of one the database refused: the trial without its verdict,
    answer and evidence, as a ``harness_error`` that says why (a bug of ours, reported, and
    never a reason to stop the run or to run the trial again on ``--resume``)."""
    from harness.errors import HARNESS_ERROR
    from harness.text import printable

    reason = f"the trial's record could not be stored ({printable(why)})"
    return row.model_copy(
        update={
            "status": HARNESS_ERROR,
            "passed": None,
            "score": None,
            "reason": reason[:2000],
            "evidence": {},
            "answer": None,
            "failure_kind": None,
            "grader_versions": {},
            "error": reason,
        }
    )


def attempt_row(
    job: Job,
    rc: RunContext,
    number: int,
    outcome: str,
    error: str | None,
    started: datetime,
    usage: Usage | None = None,
) -> AttemptRow:
    """The row of attempt ``number`` of ``job``, ended by ``outcome`` ('ok' or an error kind),
    with what it spent (``usage``; None: unknown, stored as NULL)."""
    tokens_in, tokens_cached, tokens_out = (
        usage.recorded_tokens() if usage is not None else (None, None, None)
    )
    return AttemptRow(
        **trial_key(job, rc).model_dump(),
        attempt=number,
        outcome=outcome,
        error=error,
        tokens_in=tokens_in,
        tokens_cached=tokens_cached,
        tokens_out=tokens_out,
        cost_usd=usage.cost_usd if usage is not None else None,
        started_at=started,
        finished_at=now(),
    )


class JudgeSpend(TypedDict):
    """What a trial's judges spent (the ``judge_*`` columns of its row)."""

    judge_calls: int
    judge_tokens_in: int | None
    judge_tokens_out: int | None
    judge_cost_usd: float | None


def judge_spend(evidence: TrialEvidence | None) -> JudgeSpend:
    """The sum over the trial's judge verdicts (``details.judge.usage``); unknown stays None."""
    verdicts: list[VerdictJson] = evidence["graders"] if evidence else []
    usages = [
        v["details"]["judge"]["usage"]
        for v in verdicts
        if isinstance(v["details"].get("judge"), dict)
    ]
    if not usages:
        return JudgeSpend(
            judge_calls=0, judge_tokens_in=None, judge_tokens_out=None, judge_cost_usd=None
        )

    def total(key: str) -> Any:
        values = [u.get(key) for u in usages]
        return None if any(v is None for v in values) else sum(values)

    return JudgeSpend(
        judge_calls=int(total("calls") or 0),
        judge_tokens_in=total("tokens_in"),
        judge_tokens_out=total("tokens_out"),
        judge_cost_usd=total("cost_usd"),
    )
