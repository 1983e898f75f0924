"""A judge reading files the agent left (``files:``), through `harness run` on a real
sandbox: the files leave the agent's sandbox as data and their text is in the judge's
prompt; a numeric criterion passes at its ``pass_at``; a file the agent did not leave fails
the trial without a judge call."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from graders.judge import JudgeParams
from tests.conftest import run_cli, write_suite
from tests.fakes.judge_server import prompt_of
from tests.fakes.llm_wire import Turn
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest

CRITERION = {
    "id": "funny",
    "text": "How funny is the poem?",
    "scale": "numeric",
    "min": 0,
    "max": 1,
    "pass_at": 0.8,
}


def funny_judge(req: RecordedRequest) -> Turn:
    """Scores the poem shown: 0.9 when it laughs, else 0.2."""
    score = 0.9 if "Haha" in prompt_of(req.json or {}) else 0.2
    reply = {"criteria": [{"id": "funny", "verdict": score, "reason": f"scored {score}"}]}
    return Turn(json.dumps(reply), usage=(120, 20))


def _suite(tmp: Path, base_url: str) -> Path:
    env = tmp / "environments" / "box"
    env.mkdir(parents=True)
    (env / "environment.yaml").write_text("name: box\nimage: {ref: harness-base:latest}\n")
    grader = {
        "type": "judge",
        "api": "messages",
        "model": {
            "name": "judge-model",
            "base_url": base_url,
            "api": "anthropic",
            "api_key_env": None,
            "max_retries": 0,
        },
        "reads": [],
        "files": ["poem.txt"],
        "criteria": [CRITERION],
    }
    tasks = [
        {
            "id": poem,
            "instruction": "Write a funny poem in poem.txt.",
            "environment": "box",
            "graders": [grader],
            "solution": {"commands": [f"printf '%s\\n' {text!r} > poem.txt"]},
        }
        for poem, text in [("laughs", "Haha, a poem that laughs."), ("dull", "A dull poem.")]
    ]
    return write_suite(
        tmp,
        task_list=tasks,
        environments_dir="environments",
        sandbox="unsafe-local",
        trials=1,
        arms=[{"name": "oracle", "agent": "oracle"}, {"name": "noop", "agent": "noop"}],
    )


def test_the_judge_reads_the_files_the_agent_left(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with FakeOpenAI(default=funny_judge) as server:
        done = run_cli(
            "run", str(_suite(tmp_path, server.base_url)), "--store", f"sqlite:///{db}", "-q"
        )
        posts = server.model_requests()
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    rows = sqlite3.connect(db).execute(
        "select arm, task_id, status, reason, evidence, judge_calls from trials"
    )
    got = {(a, t): (s, r, json.loads(e), c) for a, t, s, r, e, c in rows}
    # Only the oracle left a poem: the judge is asked twice, each time shown that poem.
    assert len(posts) == 2 and all(p.path.endswith("/messages") for p in posts)
    shown = sorted(re.findall(r"File poem.txt \(as left by the agent\):\n(.*)", prompt_of(p.json))[0]
                   for p in posts)  # fmt: skip
    assert shown == ["A dull poem.", "Haha, a poem that laughs."]
    assert "Final answer" not in prompt_of(posts[0].json)  # reads: [] shows only the files
    laughs, dull = got[("oracle", "laughs")], got[("oracle", "dull")]
    assert laughs[0] == "passed" and laughs[3] == 1
    assert laughs[2]["graders"][0]["details"]["judge"]["criteria"][0]["value"] == 0.9
    assert dull[0] == "failed" and "funny: scored 0.2" in dull[1]  # below pass_at 0.8
    for task in ("laughs", "dull"):
        status, reason, evidence, calls = got[("noop", task)]
        assert status == "failed" and calls == 0
        assert "the agent left no file poem.txt (the judge was not asked)" in reason
        assert evidence["graders"][0]["details"]["judge"]["usage"]["calls"] == 0


def test_files_are_part_of_the_judges_setup() -> None:
    base = {"type": "judge", "model": {"name": "m"}, "criteria": [{"id": "c", "text": "t"}]}
    plain = JudgeParams.model_validate(base)
    reading = JudgeParams.model_validate({**base, "files": ["poem.txt"]})
    assert reading.workspace_files() == ["poem.txt"] and plain.workspace_files() == []
    assert plain.setup_hash() != reading.setup_hash()
    assert "files" not in plain.setup()  # a judge without files hashes as before
    with pytest.raises(ValidationError, match="the judge would see nothing"):
        JudgeParams.model_validate({**base, "reads": []})
