"""A scripted judge with planted errors, served by ``FakeOpenAI`` in any of its three APIs.

The truth of a trial is read from the prompt the harness sent: the task asks "What is i + i?"
and the final answer is right when it says 2i. The judge then errs as planted: it passes a
right answer with probability ``sensitivity`` and fails a wrong one with probability
``specificity``, by a draw seeded from the prompt, the request's seed and ``seed`` (so a run
is reproducible and samples of one trial can differ). Pairwise prompts ("Response 1" /
"Response 2") get the better response, or the first shown with probability ``position_bias``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.llm_wire import Turn
from tests.fakes.openai_server import RecordedRequest, Reply

_QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")
_LISTED = re.compile(r"^- ([A-Za-z0-9_.-]+) \(", re.MULTILINE)
_ANSWER = re.compile(r"Final answer:\n(.*?)(?:\n\n|$)", re.DOTALL)


def prompt_of(body: dict[str, Any]) -> str:
    """The user prompt of a chat, Responses or Messages request."""
    if "input" in body:
        return str(body["input"])
    messages = body.get("messages") or []
    return str(messages[-1]["content"]) if messages else ""


def truth_of(prompt: str) -> bool:
    q, a = _QUESTION.search(prompt), _ANSWER.search(prompt)
    if q is None or a is None:
        return False
    expected = int(q.group(1)) + int(q.group(2))
    numbers = re.findall(r"-?\d+", a.group(1))
    return bool(numbers) and int(numbers[-1]) == expected


@dataclass
class ScriptedJudge:
    sensitivity: float = 1.0
    specificity: float = 1.0
    seed: int = 0
    criteria: list[str] = field(default_factory=lambda: ["correct"])
    reply: str | None = None
    """A fixed reply text instead of verdicts (garbage, cannot_apply...)."""
    usage: tuple[int, int] = (300, 40)
    length_flip: float = 0.0
    """A planted length bias: a final answer over 200 characters has its verdict flipped
    with this probability."""
    first_flip: float = 0.0
    """A planted position bias: the criterion listed first in the rubric has its verdict
    flipped with this probability."""

    def _planted(self, prompt: str, criterion: str, passed: bool) -> bool:
        a = _ANSWER.search(prompt)
        if a is not None and len(a.group(1)) > 200 and self._draw(prompt, "len") < self.length_flip:
            passed = not passed
        listed = _LISTED.findall(prompt)
        if listed and listed[0] == criterion and self._draw(prompt, "first") < self.first_flip:
            passed = not passed
        return passed

    def _draw(self, prompt: str, extra: object) -> float:
        key = f"{self.seed}|{extra}|{prompt}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64

    def verdict(self, prompt: str, extra: object = None) -> bool:
        u = self._draw(prompt, extra)
        return u < self.sensitivity if truth_of(prompt) else u >= self.specificity

    def __call__(self, req: RecordedRequest) -> Reply | Turn:
        body = req.json or {}
        prompt = prompt_of(body)
        if self.reply is not None:
            return Turn(self.reply, usage=self.usage)
        passed = self.verdict(prompt, body.get("seed"))
        answer = {
            "criteria": [
                {
                    "id": c,
                    "verdict": self._planted(prompt, c, passed),
                    "reason": f"the answer is {'right' if passed else 'wrong'}",
                }
                for c in self.criteria
            ]
        }
        return Turn(json.dumps(answer), usage=self.usage)
