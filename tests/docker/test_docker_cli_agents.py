"""Claude Code and Codex CLI, the official builds, inside the hardened shell-suite container.

One `harness run` with four arms (each CLI with a correct and with a wrong model script) on
a shell task, plus the same task under a token budget. The scripted upstream answers both
APIs (Anthropic Messages for Claude Code, OpenAI Responses for Codex, streamed as the CLIs
ask) with a tool call that edits the file and prints the program's environment, then a final
message. Checks: the correct script passes and the wrong one fails on the grader's verdict;
tokens and cost on each trial row equal the script's usage × prices; the budget stops both
CLIs as the agent's failure; the real key reaches the upstream and never the container.
Each CLI ran from the task image plus its executable (built before the run, recorded on the
trial rows and in the lock file), nothing of it in ``/run/harness``; `--locked` refuses a
changed CLI version.

The CLIs come from the npm registry on first use (cached in ``$HARNESS_CLI_CACHE``; CI
stages them ahead with `harness agents stage`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import run_cli  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest, Turn  # noqa: E402

KEY_ENV = "HARNESS_TEST_CLI_KEY"
KEY = "sk-cli-agents-test-NEVER-IN-A-CONTAINER"
USAGE, CACHED = (1000, 50), 200
CALL_COST = ((USAGE[0] - CACHED) * 1.0 + CACHED * 0.5 + USAGE[1] * 2.0) / 1e6
EDITS = {"right": "8080", "wrong": "8008"}


@pytest.fixture(autouse=True)
def cli_builds() -> None:
    """The CLIs come staged (`harness agents stage`, as .ci/run does) or npm fetches them.
    Neither: SKIP, except under CI=true where it FAILS like the other Docker tests."""
    from harness.agents.cli_agents import ClaudeCodeAgent, CodexAgent
    from harness.agents.npm_stage import staged

    packages = [cls().package(cls.VERSION) for cls in (ClaudeCodeAgent, CodexAgent)]
    if shutil.which("npm") is None and not all(staged(p) for p in packages):
        reason = "npm is not installed and the CLIs are not staged (harness agents stage)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(reason)


def _answered(req: RecordedRequest) -> bool:
    """Has the conversation already got a tool result (so the model should finish)?"""
    text = req.body.decode("utf-8", "replace")
    return '"tool_result"' in text or '"function_call_output"' in text


def script(req: RecordedRequest) -> Turn:
    body = req.json or {}
    model = str(body.get("model", ""))
    value = EDITS["wrong" if model.endswith("wrong") else "right"]
    usage = {"usage": USAGE, "cached": CACHED}
    if _answered(req) or not body.get("tools"):
        return Turn(f"Done: port is {value}.", **usage)
    # RUN""HARNESS: the listing's marker appears only in the command's output.
    edit = (
        f"sed -i 's/^port=.*/port={value}/' etc/app.conf && env && "
        "echo RUN\"\"HARNESS=$(ls -A /run/harness | tr '\\n' ,)"
    )
    tool = ("Bash", {"command": edit, "description": "edit"})
    if req.path.rstrip("/").endswith("/responses"):
        tool = ("exec_command", {"cmd": edit})
    return Turn(tool_calls=[tool], **usage)


def _suite(tmp: Path, base_url: str) -> Path:
    tasks = yaml.safe_load((ROOT / "tasks/shell/tasks.yaml").read_text())
    port = next(t for t in tasks["tasks"] if t["id"] == "shell/config-port")
    port.pop("simulated", None)
    budgeted = {**port, "id": "shell/config-port-budget", "budgets": {"max_tokens": 1500}}
    doc = {"defaults": {"environment": "shell"}, "tasks": [port, budgeted]}
    (tmp / "tasks.yaml").write_text(yaml.safe_dump(doc))

    def arm(agent: str, api: str, which: str) -> dict:
        return {
            "name": f"{agent}-{which}",
            "agent": agent,
            "model": {
                "name": f"fake-{which}",
                "base_url": base_url,
                "api_key_env": KEY_ENV,
                "api": api,
                "timeout_s": 30,
                "max_retries": 0,
                "price": {"input": 1.0, "cached_input": 0.5, "output": 2.0},
            },
        }

    suite = {
        "name": "cli-agents",
        "seed": 5,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "environments_dir": str(ROOT / "environments"),
        "sandbox": "docker",
        "concurrency": 4,
        "arms": [
            arm(agent, api, which)
            for agent, api in (("claude-code", "anthropic"), ("codex", "openai"))
            for which in ("right", "wrong")
        ],
        "budgets": {"timeout_s": 120},
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_cli_agents_run_in_docker_through_the_proxy(tmp_path, docker_client):
    with FakeOpenAI(default=script) as server:
        suite = _suite(tmp_path, server.base_url)
        db = tmp_path / "cli.db"
        result = run_cli(
            "run", str(suite), "--store", f"sqlite:///{db}", "-q", env={KEY_ENV: KEY}, timeout=600
        )
        requests = server.model_requests()
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert requests, result.stdout + result.stderr
    bodies = [r.body.decode("utf-8", "replace") for r in requests]
    # The tool ran `env` inside the container: its output came back in a tool result.
    assert any("harness-trial-" in b for b in bodies)
    # /run/harness holds the proxy's socket only: the CLI comes from the image.
    check_proxy_only(requests, bodies)
    rows = trial_rows(db)
    assert len(rows) == 8
    for agent in ("claude-code", "codex"):
        right = rows[(f"{agent}-right", "shell/config-port")]
        wrong = rows[(f"{agent}-wrong", "shell/config-port")]
        assert right["status"] == "passed", right["reason"]
        assert wrong["status"] == "failed" and "agent failure" not in wrong["reason"]
        for row in (right, wrong):
            check_metered(row, min_calls=2)
            assert json.loads(row["evidence"])["info"]["cli"].startswith(
                "@anthropic-ai/claude-code@" if agent == "claude-code" else "@openai/codex@"
            )
        budget = rows[(f"{agent}-right", "shell/config-port-budget")]
        assert budget["status"] == "failed" and "max_tokens" in budget["reason"], budget
        assert budget["tokens_in"] == 2 * USAGE[0]
    _check_images_and_lock(suite, db, rows, docker_client)


def marked(bodies: list[str], marker: str) -> set[str]:
    """The values a tool command printed as ``MARKER=value`` (seen in the requests' bodies)."""
    return {m for b in bodies for m in re.findall(marker + r"=([^\s\"\\]*)", b)}


def check_proxy_only(requests: list[RecordedRequest], bodies: list[str]) -> None:
    """The sandbox's /run/harness held only the proxy's sockets; the real key is in no
    request body and reaches the upstream only in the API's auth header."""
    listed = marked(bodies, "RUNHARNESS")
    assert listed and all(re.fullmatch(r"(model-[0-9a-f]{8}\.sock,)+", m) for m in listed), listed
    assert not any(KEY in b for b in bodies)
    for r in requests:
        if r.path.rstrip("/").endswith("/messages"):
            assert r.headers["x-api-key"] == KEY
        else:
            assert r.headers["authorization"] == f"Bearer {KEY}"


def trial_rows(db: Path) -> dict[tuple[str, str], dict]:
    """The store's trial rows by (arm, task id)."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return {(r["arm"], r["task_id"]): dict(r) for r in conn.execute("SELECT * FROM trials")}


def check_metered(row: dict, min_calls: int) -> None:
    """Tokens and cost on the row are the script's usage × prices, for a whole number of
    model calls (at least ``min_calls``)."""
    calls = row["tokens_in"] // USAGE[0]
    assert calls >= min_calls and row["tokens_in"] == calls * USAGE[0]
    assert (row["tokens_cached"], row["tokens_out"]) == (calls * CACHED, calls * USAGE[1])
    assert row["cost_usd"] == pytest.approx(calls * CALL_COST, rel=1e-9)


def _check_images_and_lock(suite: Path, db: Path, rows: dict, docker_client) -> None:
    """Each CLI arm ran the task image plus its CLI (the image the lock file pins), its rows
    pair on the task image, and `--locked` refuses another CLI version before fetching it."""
    locked = run_cli("lock", str(suite), env={KEY_ENV: KEY})
    assert locked.returncode == 0, locked.stdout + locked.stderr
    entry = json.loads(suite.with_suffix(".lock.json").read_text())["environments"]["shell"]
    with sqlite3.connect(db) as conn:
        (image_ids,) = conn.execute("SELECT image_ids FROM runs").fetchone()
    task_image = json.loads(image_ids)["shell"]
    assert entry["image_id"] == task_image
    from harness.agents.cli_agents import ClaudeCodeAgent, CodexAgent

    for cls in (ClaudeCodeAgent, CodexAgent):
        pin = entry["agents"][f"{cls.name}-{cls.VERSION}"]
        assert pin["npm"] == cls().package(cls.VERSION).spec
        ran = {r["image_id"] for (arm, _), r in rows.items() if arm.startswith(cls.name)}
        under = {r["task_image_id"] for (arm, _), r in rows.items() if arm.startswith(cls.name)}
        assert ran == {pin["image_id"]} and under == {task_image}
        layers = docker_client.images.get(pin["image_id"]).attrs["RootFS"]["Layers"]
        assert layers[:-1] == docker_client.images.get(task_image).attrs["RootFS"]["Layers"]
    doc = yaml.safe_load(suite.read_text())
    doc["arms"][2]["params"] = {"version": "0.170.0"}  # codex-right
    suite.write_text(yaml.safe_dump(doc))
    refused = run_cli(
        "run", str(suite), "--locked", "--store", f"sqlite:///{db}", "-q", env={KEY_ENV: KEY}
    )
    assert refused.returncode == 5, refused.stdout + refused.stderr
    assert (
        "environment 'shell': agent CLI codex-0.170.0 (@openai/codex@0.170.0-linux-x64) is "
        "not in the lock file" in refused.stderr
    ), refused.stderr
