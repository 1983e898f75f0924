"""What a judge is shown and how its reply is read.

The prompt lays out the rubric (one line per criterion, with its scale), then what the
judge reads: the conversation (everything the agent told the user, and the tools it
called), the final answer, and optionally the final workspace (the files the harness took
out of the agent's sandbox as data: read-only by construction, the agent's sandbox is gone)
and the text of files named in ``files``, taken out the same way.
The judge answers with one JSON object; anything else is garbage, a grader error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from graders.base import Evidence
    from harness.trajectory import Event

DEFAULT_TEMPLATE = """You grade one attempt of an AI agent at a task, against a rubric.

Task given to the agent:
{instruction}

Rubric (judge each criterion on its own):
{rubric}

{material}

Reply with one JSON object and nothing else:
{{"criteria": [{{"id": "<criterion id>", "verdict": <verdict>, "reason": "<one sentence>"}}]}}
where <verdict> is true or false for a pass/fail criterion and a number for a scale. If a
criterion cannot be judged from what you were shown, give "verdict": "cannot_apply" and say
why in the reason."""
"""The judge's prompt; ``{instruction}``, ``{rubric}`` and ``{material}`` are filled in."""

SYSTEM = "You are a careful, impartial grader. You answer only with the JSON asked for."

MATERIAL_LIMIT = 60_000
"""Characters of conversation, answer and workspace shown to the judge; beyond it the
material is cut and says so (agent transcripts are long)."""


class Criterion(BaseModel):
    """One rubric criterion."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    """the criterion's name in verdicts, labels and reports"""
    text: str = Field(min_length=1)
    """what the judge checks, as a sentence ("the agent told the customer when the refund
    arrives")"""
    scale: Literal["binary", "likert", "numeric"] = "binary"
    """binary (pass/fail, the default and the recommended kind), likert (1..points) or
    numeric (min..max)"""
    points: int = Field(5, ge=2, le=11)
    """likert: the number of points (1..points)"""
    min: float = 0.0
    """numeric: the scale's low end"""
    max: float = 10.0
    """numeric: the scale's high end"""
    pass_at: float | None = None
    """likert and numeric: the score at or above which the criterion passes (required)"""

    @model_validator(mode="after")
    def _scale(self) -> Criterion:
        if self.scale == "likert":
            self.min, self.max = 1.0, float(self.points)
        if self.scale != "binary":
            if self.pass_at is None:
                raise ValueError(f"criterion '{self.id}': a {self.scale} scale needs pass_at")
            if not self.min <= self.pass_at <= self.max:
                raise ValueError(f"criterion '{self.id}': pass_at lies outside its scale")
        elif self.pass_at is not None:
            raise ValueError(f"criterion '{self.id}': pass_at is for likert and numeric scales")
        return self

    def passes(self, value: float) -> bool:
        return value >= 0.5 if self.scale == "binary" else value >= (self.pass_at or 0.0)


class JudgeReplyError(ValueError):
    """The judge's reply is not the JSON asked for (a grader error, never the agent's)."""


def rubric_text(criteria: list[Criterion]) -> str:
    lines = []
    for c in criteria:
        if c.scale == "binary":
            scale = "pass/fail"
        else:
            scale = f"a number from {c.min:g} to {c.max:g}, passing at {c.pass_at:g} or more"
        lines.append(f"- {c.id} ({scale}): {c.text}")
    return "\n".join(lines)


def conversation_text(trajectory: Sequence[Event]) -> str:
    """What the agent and the user said, and the tools the agent called, one line each."""
    said = []
    for e in trajectory:
        if e.kind == "message":
            said.append(f"agent: {e.content or ''}")
        elif e.kind == "tool_call":
            said.append(f"agent called {e.tool}({json.dumps(e.args, default=str)[:500]})")
        elif e.kind == "user":
            said.append(f"user: {e.content or ''}")
    return "Conversation:\n" + ("\n".join(said) if said else "(nothing said)")


def answer_text(answer: str | None) -> str:
    return "Final answer:\n" + (answer or "(no answer given)")


def cut_material(text: str, limit: int = MATERIAL_LIMIT) -> str:
    """``text`` cut at ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


TOOLS_NOTE = (
    "Final workspace: the agent's work dir as it left it. Explore it with the tools "
    "list_files, read_file and grep (read-only; paths relative to the work dir) before you "
    "answer."
)


def material(
    evidence: Evidence, reads: Sequence[str], files: Sequence[str] = (), tools: bool = False
) -> str:
    parts: list[str] = []
    if "conversation" in reads:
        parts.append(conversation_text(evidence.trajectory))
    if "answer" in reads:
        parts.append(answer_text(evidence.answer))
    if "workspace" in reads and tools:
        parts.append(TOOLS_NOTE)
    elif "workspace" in reads:
        state = evidence.final_state
        shown = json.dumps(state, indent=1, default=str) if state else "(no files)"
        parts.append("Final workspace (files as left by the agent):\n" + shown)
    for path in files:
        left = evidence.files.get(path)
        parts.append(f"File {path} (as left by the agent):\n" + (left or "(empty)"))
    return cut_material("\n\n".join(parts))


def render(
    template: str | None,
    criteria: list[Criterion],
    reads: Sequence[str],
    evidence: Evidence,
    files: Sequence[str] = (),
    tools: bool = False,
) -> str:
    """The prompt for one trial: ``template`` (None: the harness's) filled in; ``tools``: the
    workspace is explored with tools rather than shown."""
    return (template or DEFAULT_TEMPLATE).format(
        instruction=evidence.task.instruction,
        rubric=rubric_text(criteria),
        material=material(evidence, reads, files, tools),
    )


@dataclass
class CriterionReply:
    id: str
    value: float | None
    """1/0 for pass/fail, the number for a scale; None: the judge could not apply it."""
    reason: str


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _parse_object(text: str) -> dict[str, Any]:
    fenced = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    for candidate in (fenced, *(m.group(0) for m in _OBJECT.finditer(text))):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    raise JudgeReplyError(f"the judge's reply is not a JSON object: {text[:200]!r}")


def parse(text: str | None, criteria: list[Criterion]) -> list[CriterionReply]:
    """Read the judge's reply: one entry per criterion of the rubric, in its order."""
    if not text:
        raise JudgeReplyError("the judge sent no text")
    data = _parse_object(text)
    entries = data.get("criteria")
    if not isinstance(entries, list):
        raise JudgeReplyError(f"the judge's reply has no 'criteria' list: {text[:200]!r}")
    by_id = {str(e.get("id")): e for e in entries if isinstance(e, dict)}
    out = []
    for c in criteria:
        entry = by_id.get(c.id)
        if entry is None:
            raise JudgeReplyError(f"the judge's reply says nothing of criterion '{c.id}'")
        out.append(
            CriterionReply(c.id, _value(entry.get("verdict"), c), str(entry.get("reason", "")))
        )
    return out


def _value(verdict: object, c: Criterion) -> float | None:
    if verdict == "cannot_apply":
        return None
    if c.scale == "binary":
        if isinstance(verdict, bool):
            return float(verdict)
        if isinstance(verdict, str) and verdict.lower() in ("pass", "fail", "true", "false"):
            return float(verdict.lower() in ("pass", "true"))
        raise JudgeReplyError(f"criterion '{c.id}': a pass/fail verdict, got {verdict!r}")
    if isinstance(verdict, bool) or not isinstance(verdict, int | float):
        raise JudgeReplyError(f"criterion '{c.id}': a number on its scale, got {verdict!r}")
    if not c.min <= float(verdict) <= c.max:
        raise JudgeReplyError(
            f"criterion '{c.id}': {verdict} is off its scale ({c.min:g} to {c.max:g})"
        )
    return float(verdict)
