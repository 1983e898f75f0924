"""The judge grader through `harness run`, against a scripted local judge endpoint."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from graders.judge import JudgeParams
from tests.conftest import run_cli, write_suite
from tests.fakes.judge_server import ScriptedJudge
from tests.fakes.openai_server import FakeOpenAI, server_error

PRICE = {"input": 1.0, "output": 4.0}


def judge_model(base_url: str, api: str = "chat") -> dict[str, Any]:
    """A judge's model block for a scripted local endpoint: no key, one price, no retries."""
    return {
        "name": "fake-model",
        "base_url": base_url,
        "api_key_env": None,
        "price": PRICE,
        "max_retries": 0,
        **({"api": "anthropic"} if api == "messages" else {}),
    }


def judge_grader(base_url: str, api: str = "chat", **extra: Any) -> dict[str, Any]:
    return {
        "type": "judge",
        "api": api,
        "model": judge_model(base_url, api),
        "criteria": [{"id": "correct", "text": "The answer is the right sum."}],
        **extra,
    }


def task(i: int, grader: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"t{i}",
        "instruction": f"What is {i} + {i}?",
        "cluster": f"c{i % 3}",
        "graders": [grader],
        "solution": {"answer": str(2 * i)},
    }


def judged_suite(tmp: Path, grader: dict[str, Any], n_tasks: int = 6, **suite: Any) -> Path:
    return write_suite(tmp, task_list=[task(i, grader) for i in range(n_tasks)], **suite)


def rows(db: Path, table: str = "trials") -> list[dict[str, Any]]:
    """Every row of a table of the SQLite store ``db``, in id order."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out = [dict(r) for r in con.execute(f"SELECT * FROM {table} ORDER BY id")]
    con.close()
    return out


def run(suite: Path, db: Path, *extra: str) -> Any:
    return run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", *extra, timeout=180)


def test_a_perfect_judge_agrees_with_the_answer_in_every_api(tmp_path: Path) -> None:
    apis = ["chat", "responses", "messages"]
    servers = [FakeOpenAI(default=ScriptedJudge()).start() for _ in apis]
    try:
        tasks = [
            task(i, judge_grader(server.base_url, api))
            for i, (server, api) in enumerate(zip(servers, apis, strict=True))
        ]
        db = tmp_path / "store.db"
        out = run(write_suite(tmp_path, task_list=tasks), db)
        assert out.returncode in (0, 1), out.stderr
    finally:
        for server in servers:
            server.stop()
    for server, api in zip(servers, apis, strict=True):
        posts = server.model_requests()
        assert len(posts) == 4  # one task, two arms, two trials
        assert all(
            p.path.endswith({"chat": "/chat/completions"}.get(api, f"/{api}")) for p in posts
        )
    got = rows(db)
    assert len(got) == 12 and {r["status"] for r in got} <= {"passed", "failed"}
    for r in got:
        evidence = json.loads(r["evidence"])
        judge = evidence["graders"][0]["details"]["judge"]
        assert judge["model"] == "fake-model" and judge["api"] == apis[int(r["task_id"][1:])]
        assert judge["criteria"][0]["reasons"][0].startswith("the answer is")
        # The oracle is always right, the simulated arm not always: the verdict follows.
        right = (r["answer"] or "").strip() == str(2 * int(r["task_id"][1:]))
        assert bool(r["passed"]) == right
        # The judge's spend is its own: one call, 300 in, 40 out at $1/$4 per million.
        assert (r["judge_calls"], r["judge_tokens_in"], r["judge_tokens_out"]) == (1, 300, 40)
        assert r["judge_cost_usd"] == pytest.approx(300e-6 + 160e-6)
        assert r["model_calls"] == 0 and not r["cost_usd"]


def test_samples_repeat_the_judgement_seeded_and_reduce_by_majority(tmp_path: Path) -> None:
    judge = ScriptedJudge(sensitivity=0.6, specificity=0.6, seed=3)
    with FakeOpenAI(default=judge) as server:
        suite = judged_suite(tmp_path, judge_grader(server.base_url, samples=5), n_tasks=4)
        db = tmp_path / "store.db"
        out = run(suite, db)
        assert out.returncode in (0, 1), out.stderr
        posts = server.model_requests()
    seeds = [p.json.get("seed") for p in posts]
    assert len(posts) == 5 * 16 and None not in seeds
    split = 0
    for r in rows(db):
        c = json.loads(r["evidence"])["graders"][0]["details"]["judge"]["criteria"][0]
        assert len(c["votes"]) == 5 and c["passed"] == (sum(c["votes"]) >= 3)
        split += c["disagreed"]
        assert r["judge_calls"] == 5 and r["judge_tokens_in"] == 1500
    assert split > 0  # a 60%-accurate judge disagrees with itself


def test_a_judge_that_fails_is_a_grader_error_never_the_agents(tmp_path: Path) -> None:
    cannot = '{"criteria": [{"id": "correct", "verdict": "cannot_apply", "reason": "no answer"}]}'
    failing = {
        "judge answered garbage": ScriptedJudge(reply="I think it is fine."),
        "could not apply criterion 'correct': no answer": ScriptedJudge(reply=cannot),
        "judge unreachable": server_error(),
    }
    servers = [FakeOpenAI(default=j).start() for j in failing.values()]
    try:
        tasks = [task(i, judge_grader(s.base_url)) for i, s in enumerate(servers)]
        db = tmp_path / "store.db"
        out = run(write_suite(tmp_path, task_list=tasks), db)
    finally:
        for server in servers:
            server.stop()
    got = rows(db)
    assert out.returncode != 0
    assert {r["status"] for r in got} == {"grader_error"}
    assert all(r["passed"] is None for r in got)
    for r in got:
        assert list(failing)[int(r["task_id"][1:])] in r["error"]


def test_the_probe_before_the_run_asks_the_judges_endpoint(tmp_path: Path) -> None:
    suite = judged_suite(tmp_path, judge_grader("http://127.0.0.1:9/v1"), n_tasks=1)
    out = run(suite, tmp_path / "store.db")
    assert out.returncode == 5
    assert "task 't0' judge grader" in out.stderr


def test_rubric_settings_are_checked_when_the_suite_loads() -> None:
    base = {"type": "judge", "model": {"name": "m"}, "criteria": [{"id": "c", "text": "t"}]}
    with pytest.raises(ValidationError, match="needs pass_at"):
        JudgeParams.model_validate(
            {**base, "criteria": [{"id": "c", "text": "t", "scale": "likert"}]}
        )
    with pytest.raises(ValidationError, match="model.api: anthropic"):
        JudgeParams.model_validate({**base, "api": "messages"})
    with pytest.raises(ValidationError, match="must contain"):
        JudgeParams.model_validate({**base, "prompt": "grade {rubric}"})
    a = JudgeParams.model_validate(base)
    b = JudgeParams.model_validate({**base, "criteria": [{"id": "c", "text": "t, strictly"}]})
    c = JudgeParams.model_validate({**base, "model": {"name": "m", "api_key_env": "OTHER"}})
    assert a.setup_hash() != b.setup_hash()  # the rubric is part of the setup
    assert a.setup_hash() == c.setup_hash()  # the key's variable is not


def test_compare_refuses_runs_judged_by_different_setups(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with FakeOpenAI(default=ScriptedJudge()) as server:
        grader = judge_grader(server.base_url)
        first = run(judged_suite(tmp_path / "a", grader, n_tasks=3), db)
        changed = {**grader, "criteria": [{"id": "correct", "text": "The sum is right."}]}
        second = run(judged_suite(tmp_path / "b", changed, n_tasks=3), db)
        again = run(judged_suite(tmp_path / "c", grader, n_tasks=3), db)
    assert {first.returncode, second.returncode, again.returncode} <= {0, 1}
    runs = [r["run_id"] for r in rows(db)]
    a, b, c = sorted(set(runs), key=runs.index)
    store = ("--store", f"sqlite:///{db}")
    out = run_cli("compare", f"{a}:base", f"{b}:base", *store)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "different judge setups on 3 task(s)" in out.stderr
    assert "--allow-judge-change" in out.stderr
    out = run_cli("compare", f"{a}:base", f"{b}:base", "--allow-judge-change", "--json", *store)
    assert out.returncode == 0, out.stderr
    c_json = json.loads(out.stdout)
    assert "allowed by --allow-judge-change" in c_json["judge_change"]
    assert not c_json["refused"] and c_json["differences"] == []
    # The same judge setup in another run pairs as before.
    out = run_cli("compare", f"{a}:base", f"{c}:base", "--json", *store)
    assert out.returncode == 0 and json.loads(out.stdout)["judge_change"] is None


def test_the_lock_pins_the_judge_setup(tmp_path: Path) -> None:
    grader = judge_grader("http://127.0.0.1:9/v1")
    suite = judged_suite(tmp_path, grader, n_tasks=2)
    out = run_cli("lock", str(suite))
    assert out.returncode == 0, out.stderr
    lock = json.loads(suite.with_suffix(".lock.json").read_text())
    assert set(lock["judges"]) == {"t0", "t1"}
    assert lock["judges"]["t0"] == [JudgeParams.model_validate(grader).setup_hash()]
    changed = {**grader, "criteria": [{"id": "correct", "text": "The sum is right."}]}
    judged_suite(tmp_path, changed, n_tasks=2)
    out = run(suite, tmp_path / "store.db", "--locked")
    assert out.returncode == 5 and "task 't0': judge setup" in out.stderr, out.stderr
