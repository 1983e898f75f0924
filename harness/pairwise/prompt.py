"""What a pairwise judge is shown and how its reply is read.

The prompt gives the task, the question (and rubric), then two responses labelled by
position, "Response A" (shown first) and "Response B" (shown second): each is what the judge
file's ``reads`` names of one trial (the conversation, the final answer). The judge answers
one JSON object naming A, B or tie; a reply that is just ``A``, ``B`` or ``tie`` is read too.
Anything else is garbage: that comparison is unresolved, never a win.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

from graders.judge_prompt import MATERIAL_LIMIT, answer_text, conversation_text, cut_material
from harness.trajectory import Event

Position = Literal["A", "B", "tie"]

TEMPLATE = """You compare two attempts by AI agents at the same task.

Task given to the agents:
{instruction}

Question: {question}
{rubric}
=== Response A ===
{first}

=== Response B ===
{second}

=== End of responses ===

Judge what the responses achieve, not the order in which they are shown nor their length.
Reply with one JSON object and nothing else:
{{"winner": "A" | "B" | "tie", "reason": "<one sentence>"}}"""
"""The prompt; ``{instruction}``, ``{question}``, ``{rubric}``, ``{first}`` and ``{second}``
are filled in."""

SYSTEM = "You are a careful, impartial judge. You answer only with the JSON asked for."


class PairwiseReplyError(ValueError):
    """The judge's reply names no winner (the comparison is unresolved)."""


def response_text(answer: str | None, trajectory: Sequence[Event], reads: Sequence[str]) -> str:
    """One response as the judge sees it, cut at half the judge's material limit."""
    parts = []
    if "conversation" in reads:
        parts.append(conversation_text(trajectory))
    if "answer" in reads:
        parts.append(answer_text(answer))
    return cut_material("\n\n".join(parts), MATERIAL_LIMIT // 2)


def render(instruction: str, question: str, rubric: str, first: str, second: str) -> str:
    """The prompt for one ordered pair: ``first`` is shown as Response A."""
    extra = f"Rubric:\n{rubric.strip()}\n" if rubric.strip() else ""
    return TEMPLATE.format(
        instruction=instruction, question=question, rubric=extra, first=first, second=second
    )


_WORD = {"a": "A", "b": "B", "tie": "tie", "response a": "A", "response b": "B"}
_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def parse(text: str | None) -> tuple[Position, str]:
    """The position the judge chose (A, B or tie) and its reason."""
    if not text or not text.strip():
        raise PairwiseReplyError("the judge sent no text")
    bare = text.strip().strip(".").strip('"').lower()
    if bare in _WORD:
        return _WORD[bare], ""  # type: ignore[return-value]
    for candidate in (text.strip().removeprefix("```json").removesuffix("```"), *_objects(text)):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and "winner" in data:
            winner = str(data["winner"]).strip().lower()
            if winner not in _WORD:
                raise PairwiseReplyError(f"the judge named no A, B or tie: {data['winner']!r}")
            return _WORD[winner], str(data.get("reason", ""))  # type: ignore[return-value]
    raise PairwiseReplyError(f"the judge's reply names no winner: {text[:200]!r}")


def _objects(text: str) -> list[str]:
    return [m.group(0) for m in _OBJECT.finditer(text)]
