"""A judge that explores the agent's work dir with tools (``tools: true``), through `harness
run` on a real sandbox, against a scripted judge endpoint in each of the three APIs: it lists
the work dir, reads answer.txt, and its verdict follows the file (4 passes, 5 fails); paths
outside the work dir and a link the agent left to a host file read nothing; the step and
byte caps hold and are stated in the verdict; every call is judge usage; prose after the
tools is a grader error."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from graders.judge import JudgeParams
from tests.conftest import require_docker, run_cli, trial_page, write_suite
from tests.fakes.exploring_judge import exploring_judge, tool_results, tools_grader
from tests.fakes.openai_server import FakeOpenAI

HOST_SECRET = Path("/etc/passwd").read_text().splitlines()[0]


TASKS: dict[str, tuple[str, str, dict[str, Any]]] = {
    # id: (instruction marker, solution command, grader settings)
    "right": ("", "printf 4 > answer.txt", {}),
    "wrong": ("", "printf 5 > answer.txt", {}),
    "escape": ("[escape]", "ln -s /etc/passwd answer.txt", {}),
    "steps": ("[loop]", "printf 4 > answer.txt", {"tool_steps": 2}),
    "bytes": ("", "printf '4%.0s' $(seq 5000) > answer.txt", {"tool_bytes": 1000}),
    "garbage": ("[garbage]", "printf 4 > answer.txt", {}),
}


def _suite(tmp: Path, base_url: str, api: str, tasks: list[str], sandbox: str) -> Path:
    env = tmp / "environments" / "box"
    env.mkdir(parents=True)
    (env / "environment.yaml").write_text("name: box\nimage: {ref: harness-base:latest}\n")
    task_list = [
        {
            "id": t,
            "instruction": f"Write 2 + 2 into answer.txt. {TASKS[t][0]}",
            "environment": "box",
            "graders": [tools_grader(base_url, api, **TASKS[t][2])],
            "solution": {"commands": [TASKS[t][1]]},
        }
        for t in tasks
    ]
    return write_suite(
        tmp,
        task_list=task_list,
        environments_dir="environments",
        sandbox=sandbox,
        trials=1,
        arms=[{"name": "oracle", "agent": "oracle"}],
    )


def _run(
    tmp: Path, api: str, tasks: list[str], sandbox: str = "unsafe-local"
) -> tuple[dict[str, Any], list[Any]]:
    db = tmp / "s.db"
    with FakeOpenAI(default=exploring_judge) as server:
        done = run_cli(
            "run", str(_suite(tmp, server.base_url, api, tasks, sandbox)), "--store", f"sqlite:///{db}",
            "-q",
        )  # fmt: skip
        posts = server.model_requests()
    assert done.returncode in (0, 1, 3), done.stdout[-2000:] + done.stderr[-2000:]
    rows = sqlite3.connect(db).execute(
        "select task_id, status, reason, evidence, judge_calls, judge_tokens_in, id from trials"
    )
    got = {t: (s, r, json.loads(e), c, tin, trial_page(db, i)) for t, s, r, e, c, tin, i in rows}
    return got, posts


def _tools(evidence: dict[str, Any]) -> dict[str, Any]:
    return evidence["graders"][0]["details"]["judge"]["tools"][0]


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_the_verdict_follows_the_file_the_judge_read(tmp_path: Path, api: str) -> None:
    got, posts = _run(tmp_path, api, ["right", "wrong"])
    assert len(posts) == 6  # per trial: list, read, answer
    assert all(p.json.get("tools") for p in posts)
    status, _, evidence, calls, tokens_in, page = got["right"]
    assert status == "passed" and calls == 3 and tokens_in == 150 + 150 + 200
    log = _tools(evidence)["calls"]
    assert [c["tool"] for c in log] == ["list_files", "read_file"]
    assert "answer.txt  (1 bytes)" in log[0]["reply"] and log[1]["reply"] == "4"
    assert _tools(evidence)["limits_hit"] == []
    assert "The judge's tool calls" in page and "<code>read_file</code>" in page  # harness view
    status, reason, evidence, calls, _, page = got["wrong"]
    assert status == "failed" and "sum: answer.txt holds '5'" in reason and calls == 3
    if api == "chat":
        _check_inspect_export(tmp_path, got)


def _check_inspect_export(tmp: Path, got: dict[str, Any]) -> None:
    """The Inspect log carries the judge's tool calls in its criterion score's metadata."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    logs = tmp / "logs"
    out = run_cli("export", "latest", "--format", "inspect", "-o", str(logs), "--store",
                  f"sqlite:///{tmp / 's.db'}")  # fmt: skip
    assert out.returncode == 0, out.stderr
    (file,) = logs.iterdir()
    samples = {s.id: s for s in read_eval_log(str(file)).samples or []}
    for task in ("right", "wrong"):
        meta = samples[task].scores["judge/sum"].metadata or {}
        assert meta["tools"] == got[task][2]["graders"][0]["details"]["judge"]["tools"]


def test_nothing_outside_the_work_dir_reaches_the_judge_and_caps_hold(tmp_path: Path) -> None:
    got, posts = _run(tmp_path, "chat", ["escape", "steps", "bytes", "garbage"])
    escape = next(p for p in posts if "[escape]" in json.dumps(p.json) and tool_results(p.json))
    everything = json.dumps([p.json for p in posts])
    assert HOST_SECRET not in everything  # the host's file never went to the judge
    status, _, evidence, _, _, page = got["escape"]
    assert status == "failed"
    replies = [c["reply"] for c in _tools(evidence)["calls"][1:]]
    assert replies == [
        "error: ../../etc/passwd: '..' leads outside the work dir; it is not followed",
        "error: /etc/passwd: absolute paths are outside the work dir; name a path relative to it",
        "error: answer.txt: a symbolic link to /etc/passwd; links are shown, never followed",
    ]
    assert (
        "answer.txt -> /etc/passwd  (symbolic link, not followed)" in tool_results(escape.json)[0]
    )
    assert "a symbolic link to /etc/passwd; links are shown, never followed" in page

    status, reason, evidence, calls, _, page = got["steps"]
    assert calls == 3 and _tools(evidence)["steps"] == 2  # two turns of tools, then told to answer
    assert "judge's tools: step cap: 2 turns of tool calls used" in reason
    assert '<p class="viol">⚠ step cap: 2 turns' in page
    last = [p.json for p in posts if "[loop]" in json.dumps(p.json)][-1]
    assert last["tool_choice"] == "none" and "You have used your 2 turns" in everything

    status, reason, evidence, _, _, page = got["bytes"]
    seen = _tools(evidence)
    assert status == "failed" and seen["bytes_read"] == 1000
    assert "judge's tools: byte cap: the 1000 bytes of tool replies were used up" in reason
    assert sum(c["bytes"] for c in seen["calls"]) <= 1000 + 60  # the cut note aside

    status, reason, _, calls, _, page = got["garbage"]
    assert status == "grader_error" and "judge answered garbage" in reason

    # The report's judge section counts the exploration: escape 4 calls, steps 2 (caps hit),
    # bytes 2 (cap hit); the garbage trial is unresolved.
    shown = run_cli("report", "latest", "--store", f"sqlite:///{tmp_path / 's.db'}",
                    "--section", "judge")  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "workspace tools: 8 tool calls in 3 trials, a cap hit in 2" in shown.stdout


@pytest.mark.parametrize("sandbox", ["bwrap", "docker"])
def test_isolating_backends_hand_the_judge_the_same_work_dir(tmp_path: Path, sandbox: str) -> None:
    """Docker's archive API and bwrap's host directory: the judge sees the work dir the
    same way, and a link the agent left is shown, not followed."""
    if sandbox == "docker":
        require_docker()
    got, _ = _run(tmp_path, "chat", ["right", "escape"], sandbox)
    status, _, evidence, calls, _, _ = got["right"]
    assert status == "passed" and calls == 3, got["right"][1]
    assert _tools(evidence)["calls"][1]["reply"] == "4"
    status, _, evidence, _, _, _ = got["escape"]
    log = _tools(evidence)["calls"]
    assert status == "failed" and "answer.txt -> /etc/passwd" in log[0]["reply"]
    assert log[-1]["reply"].endswith(
        "a symbolic link to /etc/passwd; links are shown, never followed"
    )


def test_tools_are_part_of_the_judges_setup() -> None:
    base = {
        "type": "judge",
        "model": {"name": "m"},
        "reads": ["workspace"],
        "criteria": [{"id": "c", "text": "t"}],
    }
    plain = JudgeParams.model_validate(base)
    tooled = JudgeParams.model_validate({**base, "tools": True})
    fewer = JudgeParams.model_validate({**base, "tools": True, "tool_steps": 3})
    assert len({plain.setup_hash(), tooled.setup_hash(), fewer.setup_hash()}) == 3
    assert "tools" not in plain.setup()  # a judge without tools hashes as before
    # what the judge is offered decides its verdicts: the tools' descriptions are hashed
    assert "at most max_bytes (up to 20000)" in json.dumps(tooled.setup())
    assert tooled.reads_workdir() and not plain.reads_workdir()
    with pytest.raises(ValidationError, match="add workspace to reads"):
        JudgeParams.model_validate({**base, "reads": ["answer"], "tools": True})
