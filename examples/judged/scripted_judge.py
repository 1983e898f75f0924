"""A stand-in judge endpoint for trying the judged example without a model account.

It speaks OpenAI chat completions on 127.0.0.1 (``GET /v1/models``, ``POST
/v1/chat/completions``) and grades the example's arithmetic tasks as a judge with planted
errors would: it reads "What is i + i?" and the final answer from the prompt the harness
sends, then passes a right answer with probability SENSITIVITY and fails a wrong one with
probability SPECIFICITY (a draw seeded by the prompt and the request's seed).

It answers the pairwise prompts of ``harness pairwise`` too: with probability POSITION_BIAS
it names Response A (the one shown first) whatever the responses say; otherwise it names
the right response of a right and a wrong one with probability SENSITIVITY, and says tie
when both are right or both wrong.

    python examples/judged/scripted_judge.py 8765 0.85 0.8 [POSITION_BIAS, default 0.2]
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")
ANSWER = re.compile(r"Final answer:\n(.*?)(?:\n\n|$)", re.DOTALL)
RESPONSES = re.compile(
    r"=== Response A ===\n(.*?)\n=== Response B ===\n(.*?)\n=== End of responses ===", re.DOTALL
)


def right(prompt: str) -> bool:
    q, a = QUESTION.search(prompt), ANSWER.search(prompt)
    numbers = re.findall(r"-?\d+", a.group(1)) if a else []
    return bool(q and numbers) and int(numbers[-1]) == int(q.group(1)) + int(q.group(2))


def draw(prompt: str, seed: object, what: str) -> float:
    key = f"{seed}|{what}|{prompt}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64


class Judge(BaseHTTPRequestHandler):
    sensitivity, specificity, position_bias = 0.85, 0.8, 0.2

    def log_message(self, *args: object) -> None:
        return

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "scripted-judge"}]})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = request["messages"][-1]["content"]
        seed = request.get("seed")
        pair = RESPONSES.search(prompt)
        if pair is not None:
            verdict: dict = {"winner": self._winner(prompt, seed, pair), "reason": "scripted"}
        else:
            u = draw(prompt, seed, "")
            passed = u < self.sensitivity if right(prompt) else u >= self.specificity
            reason = "the sum is right" if passed else "the sum is wrong"
            verdict = {"criteria": [{"id": "correct", "verdict": passed, "reason": reason}]}
        self._send(
            {
                "id": "judge-1",
                "object": "chat.completion",
                "model": "scripted-judge",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(verdict)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 30},
            }
        )

    def _winner(self, prompt: str, seed: object, pair: re.Match[str]) -> str:
        question = QUESTION.search(prompt)
        head = question.group(0) if question else ""
        first, second = (right(f"{head}\n{pair.group(k)}") for k in (1, 2))
        if draw(prompt, seed, "position") < self.position_bias:
            return "A"
        if first == second:
            return "tie"
        better, worse = ("A", "B") if first else ("B", "A")
        return better if draw(prompt, seed, "content") < self.sensitivity else worse


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    if len(sys.argv) > 3:
        Judge.sensitivity, Judge.specificity = float(sys.argv[2]), float(sys.argv[3])
    if len(sys.argv) > 4:
        Judge.position_bias = float(sys.argv[4])
    ThreadingHTTPServer(("127.0.0.1", port), Judge).serve_forever()
