"""A suite's ``pairwise:`` block: ``harness run`` ends by judging the run's arms with it (a
scripted judge endpoint), its setup hash is in the run's config and the lock file, and a
bad block is one line naming the file and the field."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import yaml

from harness.pairwise.setup import load_setup
from tests.conftest import run_cli, write_suite
from tests.fakes.judge_server import PairwiseJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import judge_model, rows
from tests.graders.test_pairwise import ARMS, judge_file

N_TASKS, TRIALS = 8, 2


def _suite(tmp: Path, pairwise: dict[str, Any]) -> Path:
    return write_suite(
        tmp, n_tasks=N_TASKS, n_clusters=4, arms=ARMS, trials=TRIALS, pairwise=pairwise
    )


def _run(suite: Path, db: Path, *extra: str) -> Any:
    return run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", *extra, timeout=240)


def _run_id(out: Any) -> str:
    found = re.search(r"run id: (\S+)", out.stderr)
    assert found, out.stderr
    return found.group(1)


def test_a_run_ends_by_judging_its_arms_and_its_report_shows_them(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}"
    with FakeOpenAI(default=PairwiseJudge(accuracy=0.9, position_bias=0.2, seed=9)) as server:
        judge = judge_file(tmp_path, "judge.yaml", server.base_url)
        suite = _suite(tmp_path, {"judge": "judge.yaml"})
        out = _run(suite, db)
        assert out.returncode == 0, out.stderr
        calls = len(server.model_requests())
        run_id = _run_id(out)
        again = run_cli("pairwise", run_id, "--store", url, "--json")  # the declared judge
        assert again.returncode == 0, again.stderr
        assert len(server.model_requests()) == calls  # nothing asked twice
    cells = N_TASKS * TRIALS
    assert calls == 3 * cells * 2
    assert f"pairwise judge: {calls} new judgement(s), 0 reused" in out.stderr
    assert "Pairwise judging" in out.stdout or "pairwise judge:" in out.stdout  # the report
    setup = load_setup(judge).setup_hash()
    (run,) = rows(db, "runs")
    config = json.loads(run["config"])
    assert config["pairwise"] == {"setup": setup, "model": "fake-model", "arms": None}
    stored = rows(db, "pairwise_judgements")
    assert len(stored) == calls and {g["setup"] for g in stored} == {setup}
    s = json.loads(again.stdout)
    assert s["new_calls"] == 0 and s["reused"] == calls
    report = json.loads(run_cli("report", run_id, "--json", "--store", url).stdout)
    r = report["pairwise"]["ratings"]["arms"]
    assert r["best"]["rating"] > r["mid"]["rating"] > r["weak"]["rating"]
    assert r["best"]["lo"] > r["weak"]["hi"]
    assert report["pairwise"]["judge"]["setups"] == [setup]


def test_an_inline_judge_compares_the_arms_it_names(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with FakeOpenAI(default=PairwiseJudge(accuracy=1.0, seed=1)) as server:
        inline = {"model": judge_model(server.base_url), "rubric": "The right sum wins."}
        suite = _suite(tmp_path, {"judge": inline, "arms": ["weak", "best"]})
        out = _run(suite, db)
        assert out.returncode == 0, out.stderr
        assert len(server.model_requests()) == 2 * N_TASKS * TRIALS  # one pair of arms
    stored = rows(db, "pairwise_judgements")
    assert {(g["arm_a"], g["arm_b"]) for g in stored} == {("weak", "best")}
    run_id = _run_id(out)
    report = json.loads(run_cli("report", run_id, "--json", "--store", f"sqlite:///{db}").stdout)
    (pair,) = report["pairwise"]["pairs"]  # in the run's order of arms, read mirrored
    assert (pair["arm_a"], pair["arm_b"]) == ("best", "weak")
    assert pair["losses"] == 0 < pair["wins"] and pair["win_rate"]["estimate"] > 0.5


def test_a_judge_that_fails_at_the_end_keeps_the_run_and_says_how_to_continue(
    tmp_path: Path,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    db = tmp_path / "store.db"
    suite = _suite(tmp_path, {"judge": {"model": judge_model(f"http://127.0.0.1:{port}/v1")}})
    out = _run(suite, db)
    assert out.returncode == 3, out.stderr  # unresolved: the judge gave no verdicts
    run_id = _run_id(out)
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("pairwise judge")]
    assert "judge unreachable" in line and f"`harness pairwise {run_id}" in line
    assert len(rows(db)) == len(ARMS) * N_TASKS * TRIALS  # every trial is stored
    assert rows(db, "pairwise_judgements") == []


def test_a_run_of_one_of_the_arms_skips_the_judge_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    suite = _suite(tmp_path, {"judge": {"model": judge_model("http://127.0.0.1:1/v1")}})
    out = _run(suite, db, "--arm", "best")
    assert out.returncode == 0, out.stderr
    assert "pairwise judge skipped: fewer than two of its arms ran (--arm)" in out.stderr
    assert rows(db, "pairwise_judgements") == []


def _refused(out: Any, *words: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr, out.stderr
    for w in words:
        assert w in out.stderr, (w, out.stderr)


def test_a_bad_pairwise_block_is_one_line_naming_the_file_and_field(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    model = judge_model("http://127.0.0.1:1/v1")
    suite = _suite(tmp_path, {"judge": {"model": model, "questoin": "Which?"}})
    line = next(i + 1 for i, x in enumerate(suite.read_text().splitlines()) if "questoin" in x)
    _refused(_run(suite, db), f"suite.yaml:{line}", "'pairwise.judge.questoin'")
    _refused(_run(_suite(tmp_path, {"judge": "nowhere.yaml"}), db), "'pairwise.judge'", "nowhere")
    _refused(
        _run(_suite(tmp_path, {"judge": {"model": model}, "arms": ["best", "nobody"]}), db),
        "'pairwise.arms[1]'",
        "unknown arm 'nobody'",
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"model": model, "reads": ["everything"]}))
    _refused(_run(_suite(tmp_path, {"judge": "bad.yaml"}), db), "bad.yaml", "'reads[0]'")
    _refused(_run(_suite(tmp_path, {"jugde": "bad.yaml"}), db), "'pairwise.judge'", "missing")
    assert not db.exists() or rows(db, "runs") == []  # nothing started


def test_the_lock_pins_the_pairwise_judge(tmp_path: Path) -> None:
    judge = judge_file(tmp_path, "judge.yaml", "http://127.0.0.1:1/v1")
    suite = _suite(tmp_path, {"judge": "judge.yaml"})
    out = run_cli("lock", str(suite), timeout=120)
    assert out.returncode == 0, out.stderr
    lock = json.loads(suite.with_suffix(".lock.json").read_text())
    assert lock["pairwise_judge"] == load_setup(judge).setup_hash()
    judge.write_text(judge.read_text() + "question: Which answer is shorter?\n")
    db = tmp_path / "store.db"
    out = _run(suite, db, "--locked")
    assert out.returncode == 5 and "pairwise judge setup" in out.stderr, out.stderr
    assert lock["pairwise_judge"].removeprefix("sha256:") in out.stderr
