"""The record of one step of a multi-step trial as the trial row keeps it
(``evidence.steps``): written by ``harness.trial_multistep``, read by the report."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class StepJson(TypedDict):
    """One step of a multi-step trial (``harness.trial_multistep``)."""

    name: str
    reward: float | None
    """the step's graders' score; None: not run (early stop or an earlier failure)"""
    passed: bool
    reasons: list[str]
    events: list[int | None]
    """the first and last trajectory step numbers the step holds"""
    graded_in_place: NotRequired[str | None]
    """why the step was graded in the agent's sandbox; None: in a fresh grading sandbox
    (rows written before it: absent)"""
