"""tau-bench retail end to end with a model: the `llm` agent and the private-goal simulated
user, both against the local chat-completions server with scripted replies, through
`harness run` and `harness report`: trials pass, tokens and cost are counted, pass^k shown."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import yaml

from harness.agents.user import OPENING_REQUEST
from tests.conftest import run_cli
from tests.fakes.openai_server import FakeOpenAI, call, completion

TICKET = re.compile(r"\(ticket (\d+)\)")


def _pick(tasks: list[dict]) -> list[int]:
    """A task with required outputs, one with a hand-over, one plain change."""
    outputs = next(i for i, t in enumerate(tasks) if len(t["graders"]) > 1)
    hand_over = next(
        i
        for i, t in enumerate(tasks)
        if any(a["tool"] == "transfer_to_human_agents" for a in t["solution"]["actions"])
    )
    plain = next(i for i in range(len(tasks)) if i not in (outputs, hand_over))
    return [plain, outputs, hand_over]


def test_llm_agent_runs_tau_bench_retail(tau_import, tmp_path: Path) -> None:
    out, done = tau_import
    task_dir = done["retail"].suite.parent
    source = yaml.safe_load((task_dir / "tasks.yaml").read_text())
    picks = _pick(source["tasks"])
    tasks = [source["tasks"][i] for i in picks]
    goals = [t["user"]["goal"] for t in tasks]

    def script(req):
        body = req.json
        messages = body["messages"]
        if not body.get("tools"):  # the simulated user, from its private goal
            n = next(i for i, g in enumerate(goals) if g in messages[0]["content"])
            if messages[-1]["content"] == OPENING_REQUEST:
                return completion(f"Hi, I need help with an order (ticket {n}).", usage=(300, 20))
            return completion("Thanks, that is all. ###STOP###", usage=(400, 10))
        opening = next(m["content"] for m in messages if m["role"] == "user")
        assert all(g not in str(messages) for g in goals)  # the agent never sees the goal
        task = tasks[int(TICKET.search(opening).group(1))]
        done_calls = sum(1 for m in messages if m["role"] == "tool")
        actions = task["solution"]["actions"]
        if done_calls < len(actions):
            action = actions[done_calls]
            return completion(
                tool_calls=[call(action["tool"], action["args"])], usage=(1000, 40), cached=100
            )
        return completion(task["solution"]["answer"], usage=(1000, 60))

    suite = yaml.safe_load(done["retail"].suite.read_text())
    (task_dir / "llm-sample.yaml").write_text(
        yaml.safe_dump({**source, "tasks": tasks}, sort_keys=False)
    )
    suite.update(tasks=["llm-sample.yaml"], trials=2, sandbox="unsafe-local", concurrency=1)
    suite["report"] = {"k": [1, 2]}
    path = task_dir / "llm-suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    store = f"sqlite:///{tmp_path / 'llm.db'}"
    with FakeOpenAI(default=script) as server:
        env = {
            "HARNESS_MODEL": "gpt-4o-mini",
            "OPENAI_BASE_URL": server.base_url,
            "TAU_USER_MODEL": "gpt-4o-mini",
            "TAU_USER_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
        }
        result = run_cli("run", str(path), "--store", store, "-q", env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_id = re.search(r"run id: (\S+)", result.stdout + result.stderr).group(1)
    report = run_cli("report", run_id, "--full", "--store", store)
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert "6 trials" in text or "n=6" in text, text
    assert "pass^2" in text, text
    assert re.search(r"tokens: in [1-9]", text), text
    assert re.search(r"cost: total \$0\.0\d*[1-9]", text), text
    rows = (
        sqlite3.connect(tmp_path / "llm.db")
        .execute("select status, tokens_in, tokens_out, cost_usd, evidence from trials")
        .fetchall()
    )
    assert len(rows) == 6 and all(r[0] == "passed" for r in rows), rows
    assert all(r[1] > 0 and r[2] > 0 and r[3] > 0 for r in rows)
    ended = [json.loads(r[4])["info"].get("ended_by") for r in rows]
    assert ended.count("transfer_to_human_agents") == 2  # the hand-over task, both trials
