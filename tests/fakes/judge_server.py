"""A scripted judge with planted errors, served by ``FakeOpenAI`` in any of its three APIs.

The truth of a trial is read from the prompt the harness sent: the task asks "What is i + i?"
and the final answer is right when it says 2i. The judge then errs as planted: it passes a
right answer with probability ``sensitivity`` and fails a wrong one with probability
``specificity``, by a draw seeded from the prompt, the request's seed and ``seed`` (so a run
is reproducible and samples of one trial can differ). ``PairwiseJudge`` answers the pairwise
prompts of ``harness pairwise`` ("=== Response A ===" / "=== Response B ===") with a planted
accuracy and position bias.
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


_RESPONSES = re.compile(
    r"=== Response A ===\n(.*?)\n=== Response B ===\n(.*?)\n=== End of responses ===", re.DOTALL
)


def right_answer(question: str, response: str) -> bool:
    """Does one response (its "Final answer:" block) answer "What is i + i?" rightly?"""
    return truth_of(f"{question}\n{response}")


@dataclass
class PairwiseJudge:
    """A pairwise judge: with probability ``position_bias`` it names Response A (the one shown
    first) whatever the responses say; otherwise, when one response is right and the other
    wrong, it names the right one with probability ``accuracy``, and says tie when both are
    right or both wrong. Draws are seeded from the prompt, the request's seed and ``seed``."""

    accuracy: float = 1.0
    position_bias: float = 0.0
    length_bias: float = 0.0
    """With this probability it names the clearly longer response (over 1.5 times the
    other's length) whatever the responses say; responses of similar length are judged on
    their content."""
    seed: int = 0
    reply: str | None = None
    """A fixed reply text instead of verdicts (garbage)."""
    usage: tuple[int, int] = (500, 30)

    def _draw(self, prompt: str, extra: object) -> float:
        key = f"{self.seed}|{extra}|{prompt}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64

    def truths(self, prompt: str) -> tuple[bool, bool]:
        """Whether Response A and Response B are right."""
        q, r = _QUESTION.search(prompt), _RESPONSES.search(prompt)
        assert q is not None and r is not None, prompt[:300]
        return right_answer(q.group(0), r.group(1)), right_answer(q.group(0), r.group(2))

    def lengths(self, prompt: str) -> tuple[int, int]:
        """The lengths of Response A and Response B as shown."""
        r = _RESPONSES.search(prompt)
        assert r is not None, prompt[:300]
        return len(r.group(1)), len(r.group(2))

    def __call__(self, req: RecordedRequest) -> Reply | Turn:
        body = req.json or {}
        prompt = prompt_of(body)
        if self.reply is not None:
            return Turn(self.reply, usage=self.usage)
        first, second = self.truths(prompt)
        seed = body.get("seed")
        lengths = self.lengths(prompt)
        longer = "A" if lengths[0] > lengths[1] else "B"
        if self._draw(prompt, ("position", seed)) < self.position_bias:
            winner = "A"
        elif (
            max(lengths) > 1.5 * min(lengths)
            and self._draw(prompt, ("length", seed)) < self.length_bias
        ):
            winner = longer
        elif first == second:
            winner = "tie"
        else:
            better, worse = ("A", "B") if first else ("B", "A")
            winner = better if self._draw(prompt, ("content", seed)) < self.accuracy else worse
        return Turn(json.dumps({"winner": winner, "reason": "scripted"}), usage=self.usage)


def expected_position_bias(better: list[bool], accuracy: float, bias: float) -> float:
    """The share of pairs whose two verdicts pick the same position, expected of a
    ``PairwiseJudge``, given for each pair whether one response was better than the other."""
    b, a = bias, accuracy
    unequal = (b + (1 - b) * a) * (b + (1 - b) * (1 - a)) + (1 - b) ** 2 * a * (1 - a)
    return sum(unequal if x else b * b for x in better) / len(better)
