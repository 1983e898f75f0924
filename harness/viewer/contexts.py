"""The shapes the trial page's template (``templates/trial.html.j2``) reads.

TypedDicts, so the values stay the plain dicts Jinja reads while mypy checks every key
``trial_page`` writes. Grader details are free-form per grader: the rule lists relayed from
them stay ``dict[str, object]``.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class ShownValue(TypedDict):
    """One side of a state-diff row: absent, or its JSON (cut at 400 characters)."""

    absent: bool
    text: NotRequired[str]


class DiffRow(TypedDict):
    """One differing path of a state diff."""

    cls: str
    """CSS class: 'missing', 'wrong' or 'side'."""
    label: str
    path: object
    before: ShownValue
    expected: ShownValue
    actual: ShownValue
    unchanged: bool
    """A side effect: the path was expected to keep its initial value."""


class GraderView(TypedDict):
    """One grader verdict: reasons, its state diff or trajectory rules, and raw details."""

    name: str | None
    passed: bool | None
    role: str
    version: str
    score: float | None
    reasons: list[str]
    has_diff: bool
    diff_rows: list[DiffRow]
    diff_mode: object
    patched: str
    """The paths the task expected to change, as text."""
    has_rules: bool
    required: list[dict[str, object]]
    order: list[dict[str, object]]
    """Order rules, each with its ``steps`` as text."""
    forbidden: list[dict[str, object]]
    """Forbidden actions taken, each with its ``args`` as JSON text."""
    judge_tools: list[dict[str, object]]
    """A judge's tool calls over the workspace (sample, step, tool, args as JSON text,
    the start of the reply, its bytes)."""
    judge_limits: list[str]
    """The caps the judge's tools hit (step, byte)."""
    raw: str


class EventView(TypedDict):
    """One trajectory event with its tool call, figures, content and full result."""

    step: int
    kind: str
    classes: str
    tool: str | None
    """None when the event is not a tool call."""
    args: str
    meta: str
    violations: list[str]
    content: str
    blob_ref: str | None
    blob: str | None
    blob_len: int
    blob_more: str


class PairwiseView(TypedDict):
    """One pairwise judgement of the trial against another arm's trial of the same task."""

    other_arm: str
    other_trial: int
    shown_first: str
    """'this' or 'other'."""
    verdict: str
    """'this', 'other', 'tie' or 'unresolved'."""
    reason: str
    setup: str
    cost: str
