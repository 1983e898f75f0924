"""The gate-level probe: an agent that tries to turn its failures into retries must not get
a worse candidate through a non-inferiority gate.

The candidate is right half the time; whenever it is about to be wrong it sends the model a
request the upstream refuses (an unknown ``previous_response_id``: HTTP 404). When such
refusals counted as infrastructure, the trial was retried with a fresh draw and the
candidate recorded 56/60 passed against a 60% baseline: the gate shipped it (simulated in
``benchmarks/retry_balance.py``). The refusal is the agent's own failure now, so every
trial has one attempt and the gate does not ship. The draws here come from the trial's seed
(both arms share it), so the verdict is the same every time.
Through ``harness run`` and ``harness gate``, against the scripted upstream.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from pathlib import Path

import yaml

from tests.conftest import run_cli
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest, Reply, Turn, error
from tests.integrity.test_bwrap_sandbox import require_bwrap

PROGRAM = r"""
import json, os, sys, urllib.request
right = int(os.environ["HARNESS_SEED"]) % 10 < int(sys.argv[1])  # the trial's own draw
body = {"model": "m", "input": "answer"}
if not right and sys.argv[2] == "game":
    body["previous_response_id"] = "resp_does_not_exist"  # refused: a bid for a retry
req = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/responses", data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "Content-Type": "application/json"})
urllib.request.urlopen(req).read()  # raises on the 404: the program crashes
print("yes" if right else "no")
"""


def upstream(req: RecordedRequest) -> Reply | Turn:
    if "previous_response_id" in (req.json or {}):
        return error(404, "Previous response with id 'resp_does_not_exist' not found.")
    return Turn("fine", usage=(20, 2))


def test_a_candidate_that_games_retries_is_not_shipped(tmp_path: Path) -> None:
    require_bwrap()  # host programs run in their jail
    tasks = [
        {
            "id": f"q{i:02d}",
            "instruction": "yes?",
            "graders": [{"type": "answer_match", "expected": "yes"}],
        }
        for i in range(60)
    ]
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    with FakeOpenAI(default=upstream) as server:

        def arm(name: str, tenths: int, mode: str) -> dict:
            argv = f"{shlex.quote(sys.executable)} -c {shlex.quote(PROGRAM)} {tenths} {mode}"
            model = {"name": "m", "base_url": server.base_url, "api_key_env": None}
            return {"name": name, "agent": "command", "params": {"command": argv}, "model": model}

        suite = {
            "name": "gate-probe",
            "seed": 7,
            "tasks": ["tasks.yaml"],
            "arms": [arm("base", 6, "honest"), arm("cand", 5, "game")],
            "concurrency": 8,
            "retries": {"max_attempts": 3, "backoff_s": 0},
            "gate": {
                "primary": {"baseline": "base", "candidate": "cand"},
                "rule": "non-inferiority",
                "margin": 0.05,
            },
        }
        (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
        db = tmp_path / "g.db"
        store = f"sqlite:///{db}"
        result = run_cli("run", str(tmp_path / "suite.yaml"), "--store", store, "-q", timeout=900)
        assert result.returncode == 0, result.stderr[-2000:]
        gate = run_cli("gate", "latest", "--json", "--store", store)
    verdict = json.loads(gate.stdout)
    assert gate.returncode not in (0, 10), verdict["reasons"]  # never "may ship"
    assert not verdict["may_ship"]
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT arm, status, failure_kind, attempts FROM trials WHERE arm = 'cand'"
        ).fetchall()
    assert all(attempts == 1 for *_, attempts in rows)  # no refusal became a retry
    refused = [r for r in rows if r[1] == "failed"]
    assert refused and all(kind == "agent_crashed" for _, _, kind, _ in refused)
    assert sum(r[1] == "passed" for r in rows) <= 35  # about half, not 56 of 60
