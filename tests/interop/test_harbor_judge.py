"""Harbor's llm-judge-example through the harness's judge grader: its ``[verifier.env]`` key
and model become the judge's ``model.api_key_env`` and ``model.name``, the file it reads
the judge's evidence; run on Docker against a scripted Messages judge, the oracle passes,
noop fails, the judge is shown the poem, and the key reaches no sandbox. A verifier the
mapping cannot express is refused in one line naming the file and the field."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from harness.importers.harbor import import_harbor
from tests.conftest import run_cli
from tests.fakes.judge_server import prompt_of
from tests.fakes.llm_wire import Turn
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest, Reply
from tests.interop.test_harbor_import import EXAMPLES

EXAMPLE = EXAMPLES / "llm-judge-example"
SECRET = "sk-ant-test-3f9c1d7e"
"""The judge's key in the harness's environment: it must reach the judge and no sandbox."""


def _example(tmp: Path) -> Path:
    if not EXAMPLE.is_dir():
        pytest.skip(f"the pinned Harbor examples are not at {EXAMPLE}")
    task = tmp / "src" / "llm-judge-example"
    shutil.copytree(EXAMPLE, task)
    return task


def funny_judge(req: RecordedRequest) -> Turn:
    """Scores the poem shown: 1.0 when it laughs, else 0.1."""
    score = 1.0 if "Haha" in prompt_of(req.json or {}) else 0.1
    reply = {"criteria": [{"id": "funny", "verdict": score, "reason": f"funny: {score}"}]}
    return Turn(json.dumps(reply), usage=(200, 30))


def test_the_example_maps_onto_the_judge_grader(tmp_path: Path) -> None:
    done = import_harbor(_example(tmp_path), tmp_path / "out")
    assert done.imported == ["llm-judge-example"], done.refused
    tasks = yaml.safe_load((tmp_path / "out" / "tasks" / "harbor" / "tasks.yaml").read_text())
    (entry,) = tasks["tasks"]
    (grader,) = entry["graders"]
    assert grader["type"] == "judge" and grader["api"] == "messages"
    assert grader["model"]["api_key_env"] == "ANTHROPIC_API_KEY"
    assert grader["model"]["name"] == "claude-haiku-4-5"
    assert grader["model"]["max_tokens"] == 1024
    assert grader["files"] == ["/app/poem.txt"] and grader["reads"] == []
    (criterion,) = grader["criteria"]
    assert criterion["id"] == "funny" and criterion["text"].startswith("Rate how funny")
    assert (criterion["min"], criterion["max"], criterion["pass_at"]) == (0.0, 1.0, 1.0)
    # Nothing of Harbor's script is run, so none of it is hidden material.
    assert "hidden" not in entry and "grading" not in entry
    assert not (tmp_path / "out" / "tasks" / "harbor" / "hidden" / "llm-judge-example").exists()


def test_the_example_runs_on_docker_against_a_scripted_judge(tmp_path: Path, docker_ready) -> None:
    task = _example(tmp_path)
    # Offline, the example's base images (ubuntu, uv from ghcr.io: only its script needed
    # uv) cannot be pulled; the oracle also writes its environment into the poem.
    (task / "environment" / "Dockerfile").write_text("FROM harness-base:latest\nWORKDIR /app\n")
    solve = task / "solution" / "solve.sh"
    solve.write_text(solve.read_text() + "\nenv >> /app/poem.txt\n")
    out = tmp_path / "out"
    imported = run_cli("import", "harbor", str(task.parent), "--out", str(out))
    assert "1 imported, 0 refused" in imported.stdout, imported.stdout + imported.stderr
    assert "1 task(s) are graded by a model judge" in imported.stdout
    assert "set ANTHROPIC_API_KEY, and ANTHROPIC_BASE_URL" in imported.stdout
    store = tmp_path / "h.db"
    with FakeOpenAI(default=funny_judge) as server:
        server.models = Reply(body={"object": "list", "data": [{"id": "claude-haiku-4-5"}]})
        env = {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": server.url}
        suite = out / "tasks" / "harbor" / "suite.yaml"
        args = ("--store", f"sqlite:///{store}", "-q", "--allow-internet")
        run = run_cli("run", str(suite), *args, env=env, timeout=600)
        posts = server.model_requests()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, status, reason, judge_calls from trials")
    outcome = {arm: (status, reason, calls) for arm, status, reason, calls in rows}
    assert outcome["oracle"][0] == "passed" and outcome["oracle"][2] == 1, outcome
    assert outcome["noop"][0] == "failed" and outcome["noop"][2] == 0, outcome
    assert "the agent left no file /app/poem.txt" in outcome["noop"][1]
    # One judge call (the oracle's), to the Messages API, with the poem and the key.
    (post,) = posts
    assert post.path == "/v1/messages" and post.json["model"] == "claude-haiku-4-5"
    assert post.headers["x-api-key"] == SECRET
    poem = re.search(r"File /app/poem.txt \(as left by the agent\):\n(.*)", prompt_of(post.json),
                     re.DOTALL)  # fmt: skip
    assert poem and poem.group(1).startswith("Haha I'm a funny poem.")
    # The agent's environment, as it wrote it into the poem, has no key; nor does the store.
    assert "PATH=" in poem.group(1) and SECRET not in poem.group(1)
    assert "ANTHROPIC_API_KEY" not in poem.group(1)
    assert SECRET.encode() not in store.read_bytes()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda t: _append(t / "task.toml", 'EXTRA_FLAG = "1"\n'),
            "verifier environment variables from the host (task.toml [verifier.env] EXTRA_FLAG: not the "
            "judge's key or model)",
        ),
        (
            lambda t: (t / "tests" / "test.sh").write_text("pip install x\nuv run /tests/x.py\n"),
            "verifier environment variables from the host (tests/test.sh runs 'pip install x', not one "
            "'uv run /tests/SCRIPT.py' judge script)",
        ),
        (
            lambda t: _edit(t / "tests" / "llm_judge.py", '{"funny": funny_score}', '{"funny": funny_score, "x": 1}'),
            "verifier environment variables from the host (tests/llm_judge.py: writes 2 rewards, a criterion "
            "is one score)",
        ),
        (
            lambda t: _edit(t / "tests" / "llm_judge.py", "    print(", "    ok = funny_score >= 0.7\n    print("),
            "verifier environment variables from the host (tests/llm_judge.py: compares its score with a "
            "threshold of its own",
        ),
        (
            lambda t: _edit(t / "tests" / "llm_judge.py", "from anthropic import", "from openai import"),
            "verifier environment variables from the host (tests/llm_judge.py: no Anthropic messages.create",
        ),
    ],
)  # fmt: skip
def test_a_verifier_the_mapping_cannot_express_is_refused_in_one_line(
    tmp_path: Path, change, reason: str
) -> None:
    task = _example(tmp_path)
    change(task)
    done = import_harbor(task, tmp_path / "out")
    assert done.imported == []
    why = done.refused["llm-judge-example"]
    assert why.startswith(reason) and "\n" not in why, why


def _append(path: Path, text: str) -> None:
    """Add a line to the task.toml's [verifier.env] table."""
    _edit(path, "[verifier.env]\n", "[verifier.env]\n" + text)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
