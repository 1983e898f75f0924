"""`harness validate --judge-checks RUN` against scripted judges with planted biases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.fakes.judge_server import ScriptedJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import judge_grader, judged_suite, run

TWO = [
    {"id": "correct", "text": "The answer is the right sum."},
    {"id": "plain", "text": "The answer is a plain number."},
]


def checks(tmp: Path, judge: ScriptedJudge, n_tasks: int = 20) -> dict[str, Any]:
    db = tmp / "store.db"
    with FakeOpenAI(default=judge) as server:
        suite = judged_suite(tmp, judge_grader(server.base_url, criteria=TWO), n_tasks=n_tasks)
        out = run(suite, db)
        assert out.returncode in (0, 1), out.stderr
        out = run_cli(
            "validate",
            str(suite),
            "--judge-checks",
            "latest",
            "--store",
            f"sqlite:///{db}",
            "--json",
        )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["checks"]


def test_an_unbiased_judge_never_moves(tmp_path: Path) -> None:
    got = checks(tmp_path, ScriptedJudge(criteria=["correct", "plain"]), n_tasks=8)
    for name in ("repeat", "length", "position"):
        assert got[name]["n"] == 32 and got[name]["moved"] == 0, name
        assert got[name]["ci"][1] < 0.15


def test_planted_length_and_position_biases_are_found(tmp_path: Path) -> None:
    # One bias planted at a time, so each check sees only its own. Trials of one task and
    # arm often show the judge the same prompt (the same draw): the bound is loose for that.
    for name, planted, kind in (("length", 0.4, "length_flip"), ("position", 0.3, "first_flip")):
        judge = ScriptedJudge(criteria=["correct", "plain"], seed=1, **{kind: planted})
        got = checks(tmp_path / name, judge, n_tasks=30)
        assert got["repeat"]["moved"] == 0  # deterministic judge: no noise of its own
        for cid in ("correct", "plain"):
            cell = got[name]["criteria"][cid]
            assert cell["n"] == 120 and abs(cell["rate"] - planted) < 0.15, (name, cid, cell)


def test_an_unreachable_judge_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with FakeOpenAI(default=ScriptedJudge()) as server:
        suite = judged_suite(tmp_path, judge_grader(server.base_url), n_tasks=2)
        assert run(suite, db).returncode in (0, 1)
    # The server is gone: the checks cannot reach the judge.
    out = run_cli("validate", str(suite), "--judge-checks", "latest", "--store", f"sqlite:///{db}")
    assert out.returncode == 5 and out.stderr.count("\n") == 1, out.stderr
    assert "judge unreachable" in out.stderr and "Traceback" not in out.stderr
