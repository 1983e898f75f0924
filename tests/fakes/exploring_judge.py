"""A scripted judge that explores the workspace with tools, in any of the three APIs.

Served by ``FakeOpenAI`` as its default reply. It reads the conversation the harness sent:
with no tool result yet it lists the work dir; then it reads ``answer.txt`` (and, when the
task's instruction says ``[escape]``, first tries paths outside the work dir); once it has
read the file it answers: the criterion passes when the file holds exactly ``4``. An
instruction saying ``[loop]`` makes it list files on every turn it is offered tools (to hit
the step cap); ``[garbage]`` makes it answer prose after reading.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.llm_wire import Turn
from tests.fakes.openai_server import RecordedRequest

ESCAPES = ["../../etc/passwd", "/etc/passwd"]


def first_prompt(body: dict[str, Any]) -> str:
    """The first user prompt (the rendered rubric and material)."""
    if "input" in body:
        items = body["input"]
        return str(items if isinstance(items, str) else items[0]["content"])
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return str(users[0]["content"]) if users else ""


def tool_results(body: dict[str, Any]) -> list[str]:
    """Every tool reply the harness sent back so far, in order, whatever the API."""
    out: list[str] = []
    if isinstance(body.get("input"), list):
        out += [str(i["output"]) for i in body["input"] if i.get("type") == "function_call_output"]
    for m in body.get("messages") or []:
        if m.get("role") == "tool":
            out.append(str(m["content"]))
        elif m.get("role") == "user" and isinstance(m.get("content"), list):
            out += [str(b["content"]) for b in m["content"] if b.get("type") == "tool_result"]
    return out


def tools_offered(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice")
    return bool(body.get("tools")) and choice not in ("none", {"type": "none"})


def _answer(verdict: bool, reason: str) -> Turn:
    reply = {"criteria": [{"id": "sum", "verdict": verdict, "reason": reason}]}
    return Turn(json.dumps(reply), usage=(200, 30))


def exploring_judge(req: RecordedRequest) -> Turn:
    body = req.json or {}
    prompt, seen = first_prompt(body), tool_results(body)
    offered = tools_offered(body)
    if "[loop]" in prompt and offered:
        return Turn(tool_calls=[("list_files", {"path": "."})], usage=(150, 10))
    if not seen and offered:
        return Turn(tool_calls=[("list_files", {})], usage=(150, 10))
    if len(seen) == 1 and offered:
        wanted = ESCAPES + ["answer.txt"] if "[escape]" in prompt else ["answer.txt"]
        calls = [("read_file", {"path": p, "max_bytes": 20_000}) for p in wanted]
        return Turn(tool_calls=calls, usage=(150, 10))
    if "[garbage]" in prompt:
        return Turn("The agent did fine, I think.", usage=(200, 30))
    content = seen[-1] if len(seen) > 1 else ""
    return _answer(content.strip() == "4", f"answer.txt holds {content.strip()[:40]!r}")


def tools_grader(base_url: str, api: str, **extra: Any) -> dict[str, Any]:
    """A judge grader with workspace tools on this endpoint, in ``api``, with the criterion
    ``sum`` this judge answers."""
    return {
        "type": "judge",
        "api": api,
        "model": {
            "name": "judge-model",
            "base_url": base_url,
            "api": "anthropic" if api == "messages" else "openai",
            "api_key_env": None,
            "max_retries": 0,
        },
        "reads": ["workspace"],
        "tools": True,
        "criteria": [{"id": "sum", "text": "answer.txt holds the sum."}],
        **extra,
    }
