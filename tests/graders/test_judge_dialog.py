"""The judge's conversation with tools, spoken to a real HTTP endpoint in each API: every
tool result answers a call the judge made in the turn before it (chat ``tool_call_id``,
Responses ``call_id``, Messages ``tool_use_id``), turns alternate as the APIs require, each
sample is a conversation of its own, a judge lost mid-conversation is a grader error, and a
judge with tools on a task without a work dir is refused when the suite loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from graders.judge import Judge, JudgeParams
from graders.judge_workspace import WorkView
from harness.errors import GraderError
from tests.conftest import run_cli, write_suite
from tests.fakes.exploring_judge import exploring_judge, tools_grader
from tests.fakes.llm_wire import Turn
from tests.fakes.openai_server import FakeOpenAI, server_error
from tests.graders.test_judge_workspace import archive_of


def _judge(base_url: str, api: str, **extra: Any) -> Judge:
    return Judge(JudgeParams.model_validate(tools_grader(base_url, api, **extra)))


@pytest.fixture
def work(tmp_path: Path):
    root = tmp_path / "sandbox" / "work"
    root.mkdir(parents=True)
    (root / "answer.txt").write_text("4")
    product = archive_of(tmp_path)
    try:
        yield WorkView(product)
    finally:
        product.close()


def _check_pairing(api: str, body: dict[str, Any]) -> int:
    """How many tool results the request carries, each checked against the call it answers."""
    answered = 0
    if api == "responses":
        items = body["input"]
        calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
        for i in items:
            if i.get("type") == "function_call_output":
                assert i["call_id"] in calls
                answered += 1
        return answered
    messages = body["messages"]
    for before, m in zip(messages, messages[1:], strict=False):
        if api == "chat" and m["role"] == "tool":
            assert before["role"] in ("assistant", "tool")
        if api == "messages":
            assert before["role"] != m["role"]  # Messages: user and assistant alternate
            if m["role"] == "user" and isinstance(m["content"], list):
                ids = {b["id"] for b in before["content"] if b.get("type") == "tool_use"}
                results = [b for b in m["content"] if b.get("type") == "tool_result"]
                assert results and all(b["tool_use_id"] in ids for b in results)
                answered += len(results)
    if api == "chat":
        ids = {c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]}
        tools = [m for m in messages if m["role"] == "tool"]
        assert all(m["tool_call_id"] in ids for m in tools)
        answered = len(tools)
    return answered


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_each_tool_result_answers_the_call_before_it(api: str, work: WorkView) -> None:
    with FakeOpenAI(default=exploring_judge) as server:
        judge = _judge(server.base_url, api, samples=2)
        verdict = anyio.run(judge.judge, "Write 2 + 2 into answer.txt.", 7, work)
        posts = [p.json for p in server.model_requests()]
    assert verdict.passed and len(posts) == 6  # two samples, each list, read, answer
    assert [_check_pairing(api, b) for b in posts] == [0, 1, 2, 0, 1, 2]
    tools = verdict.details["judge"]["tools"]
    assert [t["sample"] for t in tools] == [0, 1] and all(t["steps"] == 2 for t in tools)
    assert verdict.details["judge"]["usage"]["calls"] == 6
    if api == "chat":  # each sample's conversation carries its own seed throughout
        assert [b["seed"] for b in posts] == [7, 7, 7, 8, 8, 8]


def test_a_judge_lost_mid_conversation_is_a_grader_error(work: WorkView) -> None:
    with FakeOpenAI() as server:
        server.push(Turn(tool_calls=[("list_files", {})]), server_error(500))
        judge = _judge(server.base_url, "chat")
        with pytest.raises(GraderError, match="judge"):
            anyio.run(judge.judge, "Write 2 + 2 into answer.txt.", 1, work)
        assert len(server.model_requests()) == 2


def test_tools_without_a_work_dir_are_refused_when_the_suite_loads(tmp_path: Path) -> None:
    grader = {
        "type": "judge",
        "model": {"name": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None},
        "reads": ["answer", "workspace"],
        "tools": True,
        "criteria": [{"id": "c", "text": "t"}],
    }
    tasks = [{"id": "t", "instruction": "What is 1 + 1?", "graders": [grader]}]
    suite = write_suite(tmp_path, task_list=tasks)
    done = run_cli("run", str(suite), "--store", f"sqlite:///{tmp_path / 's.db'}", "-q")
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "tasks.yaml" in line and "graders[0].tools" in line
    assert "explores the agent's work dir, but this is a task without an environment" in line
    assert "Traceback" not in done.stderr
