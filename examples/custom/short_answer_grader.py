"""An example grader to copy: the final answer must be short (at most ``max_chars``).

A grader is a class with ``type_name``, ``version``, a ``Params`` model (a subclass of
``GraderParams``: unknown keys in a task file are errors naming the field) and
``async def grade(self, evidence) -> Verdict``. ``evidence`` holds the task, the final
answer, everything the agent said, its trajectory, the states before and after, and (for
graders that need it) the sandbox with the hidden material copied in after the agent.
Bump ``version`` when the grading changes: `harness compare` refuses to pair runs whose
grader versions differ.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from graders.base import Evidence, GraderParams, Verdict


class ShortAnswerParams(GraderParams):
    type: Literal["short_answer_grader:ShortAnswer"] = "short_answer_grader:ShortAnswer"
    max_chars: int = Field(20, ge=1, description="longest acceptable answer, in characters")


class ShortAnswer:
    type_name: ClassVar[str] = "short_answer"
    version: ClassVar[str] = "1"
    Params: ClassVar[type[ShortAnswerParams]] = ShortAnswerParams

    def __init__(self, params: ShortAnswerParams):
        self.params = params

    async def grade(self, evidence: Evidence) -> Verdict:
        answer = evidence.answer or ""
        ok = 0 < len(answer) <= self.params.max_chars
        reason = (
            f"answer has {len(answer)} characters (limit {self.params.max_chars})"
            if answer
            else "no answer"
        )
        return Verdict(self.type_name, ok, float(ok), [reason], version=self.version)
