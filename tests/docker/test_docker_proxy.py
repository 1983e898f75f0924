"""A ``command`` agent whose program runs INSIDE a network-less container still reaches the
model through the metering proxy (a read-only mounted unix socket and the in-container
relay), and its tokens and cost land on its trial row. The container gets no network and no
API key; the one host path it sees is the socket directory."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import run_cli  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, call, completion  # noqa: E402

KV = ROOT / "tests/models/kvenv"
PROGRAM = ROOT / "tests/models/agent_program.py"
KEY_ENV = "HARNESS_TEST_PROXY_KEY"
KEY = "sk-docker-proxy-test-NEVER-IN-A-CONTAINER"


def _kv_environment(root: Path) -> None:
    env = root / "kv"
    shutil.copytree(KV / "files", env / "files")
    shutil.copy(PROGRAM, env / "files" / "agent_program.py")
    tool = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
    spec = {
        "name": "kv",
        "image": {"ref": "harness-base:latest"},
        "workdir": "/work",
        "files": "files",
        "user": "agent",
        # what the dump reads, copied into the fresh grading sandbox (its tools come from
        # the environment's own files, never from the agent's copy)
        "state": {"kind": "command", "command": "python3 tools/state.py", "paths": ["data.json"]},
        "tools": [
            {
                "name": "kv_get",
                "description": "Read the value of a key.",
                "parameters": tool,
                "command": "python3 tools/kv_get.py",
            },
            {
                "name": "kv_set",
                "description": "Set a key to a value.",
                "parameters": {
                    **tool,
                    "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
                    "required": ["key", "value"],
                },
                "command": "python3 tools/kv_set.py",
            },
        ],
    }
    (env / "environment.yaml").write_text(yaml.safe_dump(spec))


KV_TASK = {
    "id": "kv-color",
    "instruction": "Set the color to blue and tell me what it was before.",
    "environment": "kv",
    "graders": [
        {"type": "state_diff", "expected_patch": {"color": "blue"}},
        {"type": "answer_match", "expected": "It was red.", "mode": "normalized"},
    ],
}


def _suite(tmp: Path, base_url: str) -> Path:
    _kv_environment(tmp / "environments")
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [KV_TASK]}))
    suite = {
        "name": "docker-proxy",
        "seed": 3,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "environments_dir": str(tmp / "environments"),
        "sandbox": "docker",
        "arms": [
            {
                "name": "program",
                "agent": "command",
                "params": {
                    "command": "python3 agent_program.py --dump-env",
                    "where": "sandbox",
                },
                "model": {
                    "name": "fake-model",
                    "base_url": base_url,
                    "api_key_env": KEY_ENV,
                    "timeout_s": 10,
                    "price": {"input": 1.0, "cached_input": 0.5, "output": 2.0},
                },
            }
        ],
        "budgets": {"timeout_s": 120},
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_program_inside_docker_is_metered_through_the_proxy(tmp_path, docker_client):
    with FakeOpenAI() as server:
        server.push(
            completion(tool_calls=[call("kv_get", {"key": "color"})], cached=20),
            completion(tool_calls=[call("kv_set", {"key": "color", "value": "blue"})]),
            completion("It was red."),
        )
        suite = _suite(tmp_path, server.base_url)
        db = tmp_path / "p.db"
        result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", env={KEY_ENV: KEY})
        assert result.returncode == 0, result.stdout + result.stderr
        assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.chat_requests())
        assert len(server.chat_requests()) == 3

    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        trial = conn.execute("SELECT * FROM trials").fetchone()
        notes = [
            r["content"]
            for r in conn.execute("SELECT content FROM trajectory_events WHERE kind = 'note'")
        ]
        model_calls = conn.execute(
            "SELECT count(*) FROM trajectory_events WHERE kind = 'model_call'"
        ).fetchone()[0]
    assert trial["status"] == "passed", trial["reason"]
    assert (trial["tokens_in"], trial["tokens_out"]) == (300, 30)
    # 300 prompt tokens of which 20 cached, 30 output, at $1 / $0.5 / $2 per million
    assert trial["cost_usd"] == pytest_approx((280 * 1.0 + 20 * 0.5 + 30 * 2.0) / 1e6)
    assert model_calls == 3
    program_env = next(json.loads(n) for n in notes if n and n.startswith("{"))
    assert program_env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert program_env["OPENAI_API_KEY"].startswith("harness-trial-")
    assert KEY not in json.dumps(program_env)
    assert not any(v == KEY for v in program_env.values())
    assert run_cli("gc").returncode == 0


def pytest_approx(value: float):
    import pytest

    return pytest.approx(value, rel=1e-9, abs=1e-12)
