"""Required outputs: facts the agent must have told the user (tau-bench's r_output).

The text searched is everything the agent said (``Evidence.messages``) plus its final
answer. Each required output is one of:

- a number (``54.04``): found when some number written in the text equals it within
  ``tolerance``; the text's numbers are read tolerant of formatting, so ``$54.04``,
  ``54.040``, ``USD 54.04`` and ``1,234.5`` (for 1234.5) all count;
- a string: found as a substring after case folding and collapsing whitespace; a string that
  reads as a number (``"$1,093.34"``) is also matched numerically;
- ``{any_of: [...]}``: any one of several strings or numbers (e.g. refusal phrasings);
- ``{regex: PATTERN}``: ``re.search`` over the raw text, case-insensitive.

``match: substring`` instead reads every output as plain text and finds it when it is a
substring of one message (each message on its own) after this normalisation, tau-bench's:
both sides lower-cased, commas removed from the message (not from the output). No numeric
reading, no whitespace collapsing, no ``any_of`` or ``regex``.

Passes iff every output is found; ``score`` is the fraction found. A claim is not an action:
pair this grader with a state or path grader (agent-evaluation guide: a claim-reading grader passes liars).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from graders.base import Evidence, GraderParams, Verdict

_NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|(?<![\w])\.\d+")


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text``, thousands separators and currency signs ignored."""
    out = []
    for m in _NUMBER.finditer(text):
        raw = m.group(0).replace(",", "").replace("−", "-")
        try:
            out.append(float(raw))
        except ValueError:  # pragma: no cover - the pattern only admits numbers
            continue
    return out


def as_number(text: str) -> float | None:
    """``"$1,093.34"`` -> 1093.34; None when the string is not just a (formatted) number."""
    cleaned = re.sub(r"^\s*(?:[$€£]|usd|eur)\s*|\s*(?:usd|eur|dollars?)\s*$", "", text, flags=re.I)
    cleaned = cleaned.strip()
    if not re.fullmatch(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", cleaned):
        return None
    return float(cleaned.replace(",", ""))


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


Output = str | int | float | dict[str, Any]


class RequiredOutputsParams(GraderParams):
    type: Literal["required_outputs"] = "required_outputs"
    outputs: list[Output] = Field(min_length=1, description="strings, numbers, any_of, regex")
    tolerance: float = Field(1e-6, ge=0, description="absolute tolerance for numbers")
    include_answer: bool = Field(True, description="search the final answer as well")
    match: Literal["smart", "substring"] = Field(
        "smart",
        description="smart: numbers by value, whitespace collapsed; substring: lower-cased "
        "substring of one message with commas removed from the message (tau-bench)",
    )

    @field_validator("outputs")
    @classmethod
    def _shapes(cls, v: list[Output]) -> list[Output]:
        for item in v:
            if isinstance(item, dict) and (
                len(item) != 1 or next(iter(item)) not in ("any_of", "regex")
            ):
                raise ValueError(
                    f"an output mapping must be {{any_of: [...]}} or {{regex: ...}}: {item}"
                )
            if isinstance(item, bool):
                raise ValueError("a required output cannot be a boolean")
        return v

    @model_validator(mode="after")
    def _plain(self) -> RequiredOutputsParams:
        if self.match == "substring" and any(isinstance(i, dict) for i in self.outputs):
            raise ValueError("match: substring takes plain strings or numbers, not any_of/regex")
        return self


class RequiredOutputs:
    """Outcome grader: every required output appears in what the agent told the user."""

    type_name: ClassVar[str] = "required_outputs"
    version: ClassVar[str] = "1"
    Params: ClassVar[type[RequiredOutputsParams]] = RequiredOutputsParams

    def __init__(self, params: RequiredOutputsParams):
        self.params = params

    @property
    def label(self) -> str:
        return self.params.name or self.type_name

    def _found(self, item: Output, text: str, norm: str, nums: list[float]) -> bool:
        tol = self.params.tolerance
        if isinstance(item, dict):
            ((op, operand),) = item.items()
            if op == "regex":
                return re.search(str(operand), text, flags=re.I) is not None
            return any(self._found(x, text, norm, nums) for x in operand)
        if isinstance(item, int | float):
            return any(abs(n - item) <= tol for n in nums)
        value = as_number(item)
        if value is not None and any(abs(n - value) <= tol for n in nums):
            return True
        return _norm(item) in norm

    async def grade(self, evidence: Evidence) -> Verdict:
        parts = list(evidence.messages)
        if self.params.include_answer and evidence.answer and evidence.answer not in parts[-1:]:
            parts.append(evidence.answer)
        text = "\n".join(parts)
        found: list[Output] = []
        missing: list[Output] = []
        if self.params.match == "substring":
            lowered = [p.lower().replace(",", "") for p in parts]
            for item in self.params.outputs:
                needle = str(item).lower()
                (found if any(needle in m for m in lowered) else missing).append(item)
        else:
            norm, nums = _norm(text), numbers_in(text)
            for item in self.params.outputs:
                (found if self._found(item, text, norm, nums) else missing).append(item)
        passed = not missing
        reasons = [
            f"required output {item!r} not found in the agent's messages" for item in missing
        ]
        if not text.strip():
            reasons.append("the agent told the user nothing")
        n = len(self.params.outputs)
        return Verdict(
            grader=self.label,
            passed=passed,
            score=len(found) / n,
            reasons=reasons if not passed else [],
            details={
                "found": found,
                "missing": missing,
                "searched_chars": len(text),
                "excerpt": text[:500],
            },
            role="outcome",
            version=self.version,
        )
