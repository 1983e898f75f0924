"""The suite's ``pairwise:`` block: a pairwise judge that ``harness run`` runs at the end,
comparing the run's arms (``harness pairwise RUN`` with the same judge).

Plain data here: the judge is a file (relative to the suite) or the judge file's keys
inline; ``harness.pairwise.setup`` reads and checks it when the suite is loaded.
"""

from __future__ import annotations

from pydantic import Field

from harness.config.base import Strict


class SuitePairwise(Strict):
    """A pairwise judge of the run's arms, run when ``harness run`` ends."""

    judge: str | dict[str, object]
    """the judge file (YAML, relative to the suite) or its keys inline: model, api,
    question, rubric, reads (PairwiseJudgeSetup, below; docs/graders.md)"""
    arms: list[str] | None = Field(None, min_length=2)
    """the arms to compare (default: every arm of the run; two at least)"""
