"""A real model test server returning 500 on 30% of calls: the llm arm's run completes, every
trial has one row, and the verdicts are those of a healthy server."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import threading

from tests.conftest import run_cli, write_suite
from tests.fakes.openai_server import FakeOpenAI, completion, server_error


def _answering_model(failure_rate: float, seed: int):
    """A 'model' that answers "What is i + i?" correctly, failing a share of calls with 500."""
    rng, lock = random.Random(seed), threading.Lock()
    counts = {"errors": 0, "answers": 0}

    def reply(request):
        with lock:
            fail = rng.random() < failure_rate
            counts["errors" if fail else "answers"] += 1
        if fail:
            return server_error(500)
        text = json.dumps(request.json["messages"])
        i = int(re.search(r"What is (\d+) \+", text).group(1))
        return completion(str(2 * i), usage=(50, 5))

    return reply, counts


def test_flaky_model_api_run_completes_with_healthy_verdicts(tmp_path):
    reply, counts = _answering_model(0.3, seed=4)
    with FakeOpenAI(default=reply) as server:
        model = {
            "name": "fake-model",
            "base_url": server.base_url,
            "api_key_env": "FAKE_KEY",
            "price": {"input": 1.0, "output": 2.0},
        }
        suite = write_suite(
            tmp_path,
            n_tasks=30,
            trials=1,
            concurrency=6,
            arms=[
                {"name": "llm", "agent": "llm", "model": model, "params": {"backoff_base_s": 0.01}}
            ],
            retries={"max_attempts": 4, "backoff_s": 0.05},
        )
        db = tmp_path / "m.db"
        result = run_cli(
            "run", str(suite), "--store", f"sqlite:///{db}", "-q", env={"FAKE_KEY": "sk-test-key"}
        )
    assert result.returncode == 0, result.stderr
    assert counts["errors"] >= 5  # the server really failed about 30% of calls
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT task_id, status, tokens_in, cost_usd FROM trials").fetchall()
    assert len(rows) == 30 and len({r[0] for r in rows}) == 30
    assert all(status == "passed" for _, status, _, _ in rows)
    assert all(
        tokens == 50 and abs(cost - (50 * 1.0 + 5 * 2.0) / 1e6) < 1e-12
        for _, _, tokens, cost in rows
    )
    assert "sk-test-key" not in (db.read_bytes().decode("latin-1") + result.stderr)
