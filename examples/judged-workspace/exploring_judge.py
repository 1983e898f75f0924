"""A stand-in judge that explores the workspace with tools, for trying the example without a
model account.

It speaks OpenAI chat completions with tool calls on 127.0.0.1 (``GET /v1/models``, ``POST
/v1/chat/completions``). Offered tools, it first calls ``list_files``, then ``read_file`` on
the file the task names ("Write the number into result.txt"), then answers: the criterion
passes when the file's last number is the sum the task asks for ("What is i + i?"). Token
counts are made up (the prompt's characters / 4), so the harness's judge columns fill in.

    python examples/judged-workspace/exploring_judge.py 8766
"""

from __future__ import annotations

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")
NAMED = re.compile(r"into (\S+?)\.?\s")


def reply(request: dict) -> dict:
    """The next assistant message: a tool call, or the verdict."""
    messages = request["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    offered = request.get("tools") and request.get("tool_choice") != "none"
    named = NAMED.search(prompt)
    path = named.group(1) if named else "result.txt"
    if offered and not results:
        return _call("list_files", {"path": "."})
    if offered and len(results) == 1:
        return _call("read_file", {"path": path, "max_bytes": 2000})
    q = QUESTION.search(prompt)
    numbers = re.findall(r"-?\d+", results[-1]) if results and "error:" not in results[-1] else []
    passed = bool(q and numbers) and int(numbers[-1]) == int(q.group(1)) + int(q.group(2))
    reason = f"{path} holds {results[-1][:40]!r}" if results else "nothing was read"
    verdict = {"criteria": [{"id": "correct", "verdict": passed, "reason": reason}]}
    return {"role": "assistant", "content": json.dumps(verdict)}


def _call(name: str, args: dict) -> dict:
    call = {"id": f"call_{name}", "type": "function"}
    call["function"] = {"name": name, "arguments": json.dumps(args)}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class Judge(BaseHTTPRequestHandler):
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
        self._send({"object": "list", "data": [{"id": "exploring-judge"}]})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = reply(request)
        tokens_in = len(json.dumps(request["messages"])) // 4
        tokens_out = len(json.dumps(message)) // 4
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        self._send(
            {
                "id": "judge-1",
                "object": "chat.completion",
                "model": "exploring-judge",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": tokens_in,
                    "completion_tokens": tokens_out,
                    "total_tokens": tokens_in + tokens_out,
                },
            }
        )


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8766
    print(f"exploring judge on http://127.0.0.1:{port}/v1", flush=True)
    ThreadingHTTPServer(("127.0.0.1", port), Judge).serve_forever()
