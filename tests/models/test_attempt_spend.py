"""Every attempt's tokens and cost are stored, discarded attempts' included, and counted in
the arm's cost (``report --json``: ``usage.cost.spent_usd``), through ``harness run``
against the scripted upstream."""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys

import pytest
import yaml

from tests.conftest import run_cli
from tests.fakes.openai_server import FakeOpenAI, completion, server_error

from .conftest import API_KEY, KEY_ENV, PRICE

TWO_CALLS = """
import json, os, urllib.request
def chat(text):
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                 "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)["choices"][0]["message"]["content"]
chat("think")
print(chat("answer"))
"""


def cost(i: int, o: int) -> float:
    return (i * PRICE.input + o * PRICE.output) / 1e6


def test_a_discarded_attempts_spend_is_stored_and_counted(tmp_path) -> None:
    with FakeOpenAI() as server:
        # attempt 1: one call answered (300 + 30 tokens), the next fails: infrastructure
        server.push(completion("hm", usage=(300, 30)), server_error(503))
        # attempt 2: both calls answered
        server.push(completion("hm", usage=(100, 10)), completion("4", usage=(120, 8)))
        task = {"id": "q", "instruction": "2+2?"}
        task["graders"] = [{"type": "answer_match", "expected": "4"}]
        (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}))
        model = {
            "name": "fake-model",
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "max_retries": 0,
            "price": {"input": PRICE.input, "output": PRICE.output},
        }
        command = f"{shlex.quote(sys.executable)} -c {shlex.quote(TWO_CALLS)}"
        arm = {"name": "prog", "agent": "command", "params": {"command": command}, "model": model}
        suite = {
            "name": "s",
            "seed": 1,
            "trials": 1,
            "tasks": ["tasks.yaml"],
            "arms": [arm],
            "retries": {"max_attempts": 3, "backoff_s": 0},
        }
        (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
        db = tmp_path / "s.db"
        env = {KEY_ENV: API_KEY}
        result = run_cli(
            "run", str(tmp_path / "suite.yaml"), "--store", f"sqlite:///{db}", "-q", env=env
        )
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(db) as conn:
        attempts = conn.execute(
            "SELECT attempt, outcome, tokens_in, tokens_out, cost_usd FROM attempts ORDER BY 1"
        ).fetchall()
        trial = conn.execute(
            "SELECT status, tokens_in, tokens_out, cost_usd FROM trials"
        ).fetchall()
    first, second = cost(300, 30), cost(100, 10) + cost(120, 8)
    assert attempts == [
        (1, "infra_error", 300, 30, pytest.approx(first)),
        (2, "ok", 220, 18, pytest.approx(second)),
    ]
    assert trial == [("passed", 220, 18, pytest.approx(second))]  # the verdict's attempt
    report = run_cli("report", "--json", "--store", f"sqlite:///{db}")
    assert report.returncode == 0, report.stderr
    arm = json.loads(report.stdout)["arms"]["prog"]
    assert arm["infra"]["retried_trials"] == 1  # the retry rate per arm
    assert arm["infra"]["retry_rate"]["estimate"] == 1.0 and arm["infra"]["retry_rate"]["n"] == 1
    spent = arm["usage"]["cost"]
    assert spent["total_usd"] == pytest.approx(second)  # resolved trials, as before
    assert spent["spent_usd"] == pytest.approx(first + second)  # what the arm cost
    assert spent["discarded_attempts"] == 1
    assert spent["discarded_usd"] == pytest.approx(first)
    assert spent["unknown_cost_attempts"] == 0
    text = run_cli("report", "--full", "--store", f"sqlite:///{db}")
    flat = " ".join(text.stdout.split())
    assert "of which $0.0004 on 1 discarded attempt(s)" in flat
    assert "1 trial(s) retried, 100.0%" in flat
