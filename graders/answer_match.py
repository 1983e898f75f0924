"""answer_match: compare the agent's final answer with the expected one.

Modes: ``exact`` (byte-for-byte after trimming outer whitespace), ``normalized`` (case,
punctuation and spacing ignored), ``numeric`` (the last number in the answer, within an
absolute ``tolerance``), ``regex`` (full match of a Python regular expression) and
``one_of`` (normalized match against any listed answer).
"""

from __future__ import annotations

import re
import string
from typing import ClassVar, Literal

from pydantic import model_validator

from graders.base import Evidence, GraderParams, Verdict

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def normalize(text: str) -> str:
    """Lower case, punctuation to spaces, whitespace collapsed."""
    return " ".join(text.casefold().translate(_PUNCT).split())


def last_number(text: str) -> float | None:
    """The last number written in ``text`` ('$1,234.50' -> 1234.5), or None."""
    found = [m.group(0) for m in _NUMBER.finditer(text) if any(ch.isdigit() for ch in m.group(0))]
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


class AnswerMatchParams(GraderParams):
    type: Literal["answer_match"] = "answer_match"
    expected: str | float | int | list[str | float | int]
    """the expected answer; a list for one_of; a pattern for regex"""
    mode: Literal["exact", "normalized", "numeric", "regex", "one_of"] = "normalized"
    """how the final answer is compared (see the grader's text below)"""
    tolerance: float = 0.0
    """Absolute tolerance for numeric mode."""

    @model_validator(mode="after")
    def _check(self) -> AnswerMatchParams:
        if self.mode == "one_of" and not isinstance(self.expected, list):
            raise ValueError("mode 'one_of' needs 'expected' to be a list")
        if self.mode != "one_of" and isinstance(self.expected, list):
            raise ValueError(f"mode '{self.mode}' needs a single 'expected' value, not a list")
        if self.mode == "numeric" and last_number(str(self.expected)) is None:
            raise ValueError("mode 'numeric' needs a numeric 'expected'")
        if self.mode == "regex":
            try:
                re.compile(str(self.expected))
            except re.error as exc:
                raise ValueError(f"invalid regular expression: {exc}") from None
        if self.tolerance < 0:
            raise ValueError("tolerance must be >= 0")
        return self


class AnswerMatch:
    type_name: ClassVar[str] = "answer_match"
    version: ClassVar[str] = "1"
    Params: ClassVar[type[GraderParams]] = AnswerMatchParams

    def __init__(self, params: AnswerMatchParams):
        self.params = params
        # Parsed once: graders are built once per run and called once per trial.
        self._normalized = normalize(str(params.expected))
        expected = params.expected
        self._choices = (
            {normalize(str(e)) for e in expected}
            if params.mode == "one_of" and isinstance(expected, list)
            else set()
        )
        self._target = last_number(str(params.expected)) if params.mode == "numeric" else None
        self._regex = (
            re.compile(str(params.expected), re.DOTALL) if params.mode == "regex" else None
        )

    async def grade(self, evidence: Evidence) -> Verdict:
        return self.check(evidence.answer)

    def check(self, answer: str | None) -> Verdict:
        p = self.params
        label = p.name or self.type_name
        if answer is None or not answer.strip():
            return self._verdict(label, False, "no answer given", answer)
        got = answer.strip()
        if p.mode == "exact":
            ok = got == str(p.expected).strip()
        elif p.mode == "normalized":
            ok = normalize(got) == self._normalized
        elif p.mode == "one_of":
            ok = normalize(got) in self._choices
        elif p.mode == "regex":
            ok = self._regex is not None and self._regex.fullmatch(got) is not None
        else:
            value = last_number(got)
            target = self._target
            ok = value is not None and target is not None and abs(value - target) <= p.tolerance
        reason = (
            "" if ok else f"answer {got[:120]!r} does not match expected {p.expected!r} ({p.mode})"
        )
        return self._verdict(label, ok, reason, got)

    def _verdict(self, label: str, ok: bool, reason: str, got: str | None) -> Verdict:
        return Verdict(
            grader=label,
            passed=ok,
            score=float(ok),
            reasons=[reason] if reason else [],
            details={"mode": self.params.mode, "expected": self.params.expected, "answer": got},
            version=self.version,
        )
