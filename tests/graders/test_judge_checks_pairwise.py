"""`harness validate --judge-checks RUN` on a pairwise judge: the stored swapped order is the
position check, a padded response the length check, against scripted pairwise judges with a
planted position or length bias."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli, write_suite
from tests.fakes.judge_server import PairwiseJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_pairwise import judge_file

ARMS = [
    {"name": "best", "agent": "oracle"},
    {"name": "weak", "agent": "simulated", "params": {"p": 0.3}},
]
N_TASKS, TRIALS = 20, 3
PAIRS = N_TASKS * TRIALS


def checked(tmp: Path, judge: PairwiseJudge) -> dict[str, Any]:
    """A two-arm run, judged pairwise, then checked: the pairwise part of the JSON."""
    suite = write_suite(tmp, n_tasks=N_TASKS, n_clusters=10, arms=ARMS, trials=TRIALS)
    url = f"sqlite:///{tmp / 'store.db'}"
    out = run_cli("run", str(suite), "--store", url, "-q", timeout=240)
    assert out.returncode in (0, 1), out.stderr
    with FakeOpenAI(default=judge) as server:
        path = judge_file(tmp, "judge.yaml", server.base_url)
        out = run_cli("pairwise", "latest", "--judge", str(path), "--store", url, timeout=180)
        assert out.returncode == 0, out.stderr
        args = ["validate", str(suite), "--judge-checks", "latest", "--store", url]
        out = run_cli(*args, "--pairwise", str(path), "--json", timeout=180)
        assert out.returncode == 0, out.stderr
        text = run_cli(*args, "--pairwise", str(path), timeout=180).stdout
    assert "Pairwise judge sha256:" in text
    assert [x for x in text.splitlines() if len(x) > 80] == []
    summary = json.loads(out.stdout)
    assert summary["checks"]["repeat"]["n"] == 0  # no rubric judge in this suite
    # Two new calls per pair (repeat, length), the position check reads what is stored.
    assert summary["judge_usage"]["calls"] == 2 * PAIRS
    return summary["pairwise"]


def test_a_position_bias_moves_only_the_position_check(tmp_path: Path) -> None:
    got = checked(tmp_path, PairwiseJudge(position_bias=0.4, seed=3))
    checks = got["checks"]
    assert checks["position"]["n"] == PAIRS and got["skipped"] == {}
    assert checks["repeat"]["moved"] == 0  # a seeded, deterministic judge
    # The verdict follows the position in either order with probability 0.4 each: it
    # names another arm (or a tie) in the swapped order in about 1 − (0.4² + 0.6²) of pairs
    # whose content decides, 2·0.4·0.6 = 0.48, fewer where the better side was shown first.
    assert 0.2 <= checks["position"]["rate"] <= 0.65, checks["position"]
    assert checks["position"]["criteria"]["best vs weak"]["n"] == PAIRS


def test_a_length_bias_moves_the_length_check(tmp_path: Path) -> None:
    got = checked(tmp_path, PairwiseJudge(length_bias=0.5, seed=3))
    checks = got["checks"]
    assert checks["repeat"]["moved"] == 0
    # The padded side is the one the stored verdict did not pick: the judge moves to it
    # whenever its length draw hits (0.5). The few pairs whose own responses differ in
    # length by half already move a little with the order (a new prompt, a new draw).
    assert abs(checks["length"]["rate"] - 0.5) <= 0.2, checks
    lo, hi = checks["length"]["ci"]
    assert lo <= 0.5 <= hi and checks["position"]["rate"] < lo, checks


def test_no_pairwise_judge_means_no_pairwise_section(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, n_tasks=2, arms=ARMS)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert run_cli("run", str(suite), "--store", url, "-q").returncode in (0, 1)
    out = run_cli("validate", str(suite), "--judge-checks", "latest", "--store", url, "--json")
    assert out.returncode == 0, out.stderr
    assert "pairwise" not in json.loads(out.stdout)
