"""`harness pairwise RUN` end to end: a run of three simulated arms of different quality, then
a scripted pairwise judge with a planted accuracy and position bias."""

from __future__ import annotations

import json
import socket
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.pairwise.setup import load_setup
from harness.report.render.pairwise import pairwise_blocks, pairwise_head, pairwise_line
from tests.conftest import run_cli, trial_page, write_suite
from tests.fakes.judge_server import PairwiseJudge, expected_position_bias
from tests.fakes.openai_server import FakeOpenAI, server_error
from tests.graders.test_judge import judge_model, rows
from tests.report.test_judge_section import every_view

ARMS = [
    {"name": "best", "agent": "oracle"},
    {"name": "mid", "agent": "simulated", "params": {"p": 0.6}},
    {"name": "weak", "agent": "simulated", "params": {"p": 0.2}},
]
N_TASKS, TRIALS = 16, 3
ACCURACY, BIAS = 0.9, 0.3


def judge_file(tmp: Path, name: str, base_url: str, api: str = "chat", **extra: Any) -> Path:
    path = tmp / name
    doc = {"model": judge_model(base_url, api), "api": api, **extra}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def pairwise(run: dict[str, Any], judge: Path, *args: str) -> Any:
    return run_cli(
        "pairwise", run["id"], "--judge", str(judge), *args, "--store", run["url"], timeout=180
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("pairwise")
    suite = write_suite(tmp, n_tasks=N_TASKS, n_clusters=8, arms=ARMS, trials=TRIALS)
    db = tmp / "store.db"
    out = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=240)
    assert out.returncode in (0, 1), out.stderr
    trials = rows(db)
    right = {
        (r["arm"], r["task_id"], r["trial_index"]): (r["answer"] or "").strip()
        == str(2 * int(r["task_id"][1:]))
        for r in trials
    }
    return {
        "tmp": tmp,
        "db": db,
        "url": f"sqlite:///{db}",
        "id": trials[0]["run_id"],
        "right": right,
    }


def test_the_better_arm_wins_the_bias_is_found_and_a_rerun_costs_nothing(
    run: dict[str, Any],
) -> None:
    judge = PairwiseJudge(accuracy=ACCURACY, position_bias=BIAS, seed=7)
    with FakeOpenAI(default=judge) as server:
        path = judge_file(run["tmp"], "judge.yaml", server.base_url)
        out = pairwise(run, path, "--json")
        assert out.returncode == 0, out.stderr
        first_calls = len(server.model_requests())
        again = pairwise(run, path, "--json")
        assert again.returncode == 0, again.stderr
        assert len(server.model_requests()) == first_calls  # the rerun asked nothing
        narrow = run_cli(
            *["pairwise", run["id"], "--judge", str(path), "--store", run["url"]],
            env={"COLUMNS": "80"},
            timeout=180,
        )
        posts = server.model_requests()
    # The terminal table at 80 columns: nothing cut, nothing wider (tests/cli/test_narrow_tables).
    assert narrow.returncode == 0, narrow.stderr
    lines = (narrow.stdout + narrow.stderr).splitlines()
    assert "…" not in narrow.stdout and not [x for x in lines if len(x) > 80], narrow.stdout
    s, s2 = json.loads(out.stdout), json.loads(again.stdout)
    cells = N_TASKS * TRIALS
    assert first_calls == 3 * cells * 2 == s["new_calls"] == s["judge"]["calls"]
    assert s2["new_calls"] == 0 and s2["reused"] == first_calls
    for key in ("pairs", "ratings", "position_bias", "judge"):
        assert s2[key] == s[key], key

    # Every judgement is stored, with its order, verdict, tokens, cost and setup.
    got = rows(run["db"], "pairwise_judgements")
    assert len(got) == first_calls and len({g["setup"] for g in got}) == 1
    assert {g["verdict"] for g in got} <= {"A", "B", "tie"}
    assert all((g["tokens_in"], g["tokens_out"]) == (500, 30) for g in got)
    assert s["judge"]["cost_usd"] == pytest.approx(first_calls * (500e-6 + 120e-6))
    # Seeded: the two orders of one pair carry the pair's trial seed and the next.
    seeds = sorted(p.json["seed"] for p in posts)
    assert len(set(seeds)) == 2 * cells

    # The better arm wins every pair, its interval above one half.
    by_pair = {(p["arm_a"], p["arm_b"]): p for p in s["pairs"]}
    for a, b in combinations([x["name"] for x in ARMS], 2):
        w = by_pair[(a, b)]["win_rate"]
        assert w["lo"] > 0.5 and w["lo"] <= w["estimate"] <= w["hi"], (a, b, w)
        assert by_pair[(a, b)]["comparisons"] == cells and w["n"] == N_TASKS
        assert w["unit"] == "cluster" and w["n_units"] == 8
        # Wins counted independently from the stored rows: both orders name arm_a.
        orders: dict[tuple[str, int], dict[str, str]] = {}
        for g in got:
            if (g["arm_a"], g["arm_b"]) == (a, b):
                orders.setdefault((g["task_id"], g["trial_index"]), {})[g["shown_first"]] = g[
                    "verdict"
                ]
        wins = sum(o == {"A": "A", "B": "A"} for o in orders.values())
        assert by_pair[(a, b)]["wins"] == wins
    r = s["ratings"]["arms"]
    assert r["best"]["rating"] > r["mid"]["rating"] > r["weak"]["rating"]
    assert r["best"]["lo"] > r["weak"]["hi"]

    # The planted position bias is found: the expected share of pairs whose verdicts picked
    # the same position (from the planted accuracy and bias and which pairs had a better
    # side) lies in the interval, and within 0.08 of the estimate.
    right = run["right"]
    better = [
        right[(a, f"t{t}", k)] != right[(b, f"t{t}", k)]
        for a, b in combinations([x["name"] for x in ARMS], 2)
        for t in range(N_TASKS)
        for k in range(TRIALS)
    ]
    expected = expected_position_bias(better, ACCURACY, BIAS)
    bias = s["position_bias"]
    assert bias["n"] == len(better)
    assert bias["lo"] <= expected <= bias["hi"], (bias, expected)
    assert abs(bias["rate"] - expected) < 0.08, (bias, expected)
    # A judge with no position bias shows far less (the check can tell them apart).
    assert expected_position_bias(better, ACCURACY, 0.0) < bias["lo"]

    text = pairwise(run, path)
    assert text.returncode == 0, text.stderr
    assert "best vs weak" in text.stdout and "Bradley–Terry" in text.stdout
    assert f"{first_calls} judge calls (0 new, {first_calls} reused" in text.stdout
    md = pairwise(run, path, "--markdown")
    assert md.stdout.startswith("## Pairwise judging") and "position bias" in md.stdout


def test_garbage_replies_are_unresolved_never_a_win(run: dict[str, Any]) -> None:
    with FakeOpenAI(default=PairwiseJudge(reply="Both look fine to me.")) as server:
        path = judge_file(run["tmp"], "garbage.yaml", server.base_url, api="messages")
        out = pairwise(run, path, "--arm", "best", "--arm", "weak", "--json")
        assert out.returncode == 0, out.stderr
        assert all(p.path.endswith("/messages") for p in server.model_requests())
    s = json.loads(out.stdout)
    (pair,) = s["pairs"]
    assert pair["unresolved"] == N_TASKS * TRIALS and pair["comparisons"] == 0
    assert pair["win_rate"] is None and pair["wins"] == 0
    assert s["judge"]["unresolved_calls"] == 2 * N_TASKS * TRIALS and s["ratings"] is None


def test_an_unreachable_judge_is_one_line_and_a_nonzero_exit(run: dict[str, Any]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = judge_file(run["tmp"], "gone.yaml", f"http://127.0.0.1:{port}/v1")
    out = pairwise(run, path)
    assert out.returncode == 5, out.stderr
    assert out.stderr.strip().count("\n") == 0 and "judge unreachable" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_bad_judge_file_is_one_line_naming_file_and_field(run: dict[str, Any]) -> None:
    typo = judge_file(run["tmp"], "typo.yaml", "http://127.0.0.1:1/v1", questoin="Which?")
    out = pairwise(run, typo)
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0
    assert "typo.yaml" in out.stderr and "'questoin'" in out.stderr
    wrong = judge_file(run["tmp"], "api.yaml", "http://127.0.0.1:1/v1")
    wrong.write_text(wrong.read_text().replace("api: chat", "api: messages"))
    out = pairwise(run, wrong)
    assert out.returncode == 2 and "'model.api'" in out.stderr and "api.yaml" in out.stderr
    ok = judge_file(run["tmp"], "ok.yaml", "http://127.0.0.1:1/v1")
    out = pairwise(run, ok, "--arm", "nobody")
    assert out.returncode == 2 and "no arm 'nobody'" in out.stderr
    out = pairwise(run, ok, "--confidence", "1.5")
    assert out.returncode == 2 and "'--confidence'" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("judge-agreement", run["id"], "--confidence", "95", "--store", run["url"])
    assert out.returncode == 2 and "'--confidence'" in out.stderr


def test_every_report_view_shows_the_pairwise_section_with_the_same_numbers(
    run: dict[str, Any],
) -> None:
    with FakeOpenAI(default=PairwiseJudge(accuracy=0.8, position_bias=0.1, seed=3)) as server:
        path = judge_file(run["tmp"], "report.yaml", server.base_url)
        out = pairwise(run, path, "--json")
        assert out.returncode == 0, out.stderr
    command = json.loads(out.stdout)
    url, run_id = run["url"], run["id"]
    report = json.loads(run_cli("report", run_id, "--json", "--store", url).stdout)
    section = report["pairwise"]  # the newest setup's judgements: this test's
    for key in ("run_id", "arms", "pairs", "position_bias", "ratings", "judge"):
        assert section[key] == command[key], key

    lines = [pairwise_head(section)] + [x for _, b in pairwise_blocks(section) for x in b]
    assert any("win rate" in x for x in lines) and any("best " in x for x in lines)
    page = run["tmp"] / "report.html"
    terminal, markdown, text = every_view(run_id, url, "pairwise", lines, page)
    assert pairwise_line(section) in terminal  # the first screen's one line
    assert "### Pairwise judging" in markdown and 'href="#pairwise"' in text


def test_a_judge_that_fails_midway_keeps_what_was_paid_and_a_rerun_continues(
    run: dict[str, Any],
) -> None:
    judge = PairwiseJudge(accuracy=0.9, seed=11)
    pairs = N_TASKS * TRIALS  # best vs weak
    with FakeOpenAI(default=server_error(503)) as server:
        server.push(*[judge] * 20)  # 20 answers, then the endpoint fails
        path = judge_file(run["tmp"], "flaky.yaml", server.base_url)
        arms = ("--arm", "best", "--arm", "weak")
        out = pairwise(run, path, *arms, "--concurrency", "4")
        assert out.returncode == 5 and out.stderr.strip().count("\n") == 0, out.stderr
        assert "judge unreachable" in out.stderr and "20 new judgement(s) stored" in out.stderr
        setup = load_setup(path).setup_hash()
        kept = [g for g in rows(run["db"], "pairwise_judgements") if g["setup"] == setup]
        assert len(kept) == 20  # every answered call is kept
        asked = len(server.model_requests())
        server.default = judge
        again = pairwise(run, path, *arms, "--json")
        assert again.returncode == 0, again.stderr
        # The rerun asks only what was not answered: the 20 answers are not bought again.
        assert len(server.model_requests()) - asked == 2 * pairs - 20
    s = json.loads(again.stdout)
    assert s["new_calls"] == 2 * pairs - 20 and s["reused"] == 20
    assert s["pairs"][0]["comparisons"] == pairs and s["judge"]["calls"] == 2 * pairs


def test_pairwise_judgements_leave_the_store_and_come_back(run: dict[str, Any]) -> None:
    with FakeOpenAI(default=PairwiseJudge(accuracy=0.7, position_bias=0.2, seed=5)) as server:
        path = judge_file(run["tmp"], "export.yaml", server.base_url)
        assert pairwise(run, path, "--arm", "mid", "--arm", "weak").returncode == 0
    log, log2 = run["tmp"] / "run.jsonl", run["tmp"] / "again.jsonl"
    out = run_cli("export", run["id"], "-o", str(log), "--store", run["url"])
    assert out.returncode == 0, out.stderr
    judged = [x for x in map(json.loads, log.read_text().splitlines()) if x["type"] == "pairwise"]
    assert len(judged) == 1
    assert len(judged[0]["judgements"]) == len(rows(run["db"], "pairwise_judgements"))
    copy = f"sqlite:///{run['tmp'] / 'copy.db'}"
    out = run_cli("import-log", str(log), "--store", copy)
    assert out.returncode == 0, out.stderr
    assert run_cli("export", run["id"], "-o", str(log2), "--store", copy).returncode == 0
    assert log2.read_bytes() == log.read_bytes()  # every column came back
    # The copy reports the same pairwise section.
    first = json.loads(run_cli("report", run["id"], "--json", "--store", run["url"]).stdout)
    second = json.loads(run_cli("report", run["id"], "--json", "--store", copy).stdout)
    assert second["pairwise"] == first["pairwise"]


def test_the_trial_page_shows_its_pairwise_judgements_from_its_side(run: dict[str, Any]) -> None:
    first = PairwiseJudge(reply='{"winner": "A", "reason": "the first one reads better"}')
    with FakeOpenAI(default=first) as server:
        path = judge_file(run["tmp"], "viewer.yaml", server.base_url)
        assert pairwise(run, path, "--arm", "best", "--arm", "weak").returncode == 0
    setup = load_setup(path).setup_hash()
    mine = [
        g
        for g in rows(run["db"], "pairwise_judgements")
        if g["setup"] == setup and g["task_id"] == "t0" and g["trial_index"] == 0
    ]
    assert len(mine) == 2
    best, weak = mine[0]["trial_a"], mine[0]["trial_b"]
    page = trial_page(run["db"], best)
    section = page[page.index('<section id="pairwise">') :]
    assert f'href="/trial/{weak}">weak (trial {weak})' in section
    # The judge always named the response shown first: this trial when it was shown first.
    assert "<td>this</td><td>this</td><td>the first one reads better</td>" in section
    assert "<td>other</td><td>other</td>" in section
    assert setup in section
    assert '<section id="pairwise">' in trial_page(run["db"], weak)


def test_the_responses_api_judges_too_without_a_seed(run: dict[str, Any]) -> None:
    with FakeOpenAI(default=PairwiseJudge(accuracy=0.9, position_bias=0.1, seed=2)) as server:
        path = judge_file(run["tmp"], "responses.yaml", server.base_url, api="responses")
        out = pairwise(run, path, "--arm", "best", "--arm", "weak", "--json")
        assert out.returncode == 0, out.stderr
        posts = server.model_requests()
    assert len(posts) == 2 * N_TASKS * TRIALS
    assert all(p.path.endswith("/responses") and "seed" not in p.json for p in posts)
    assert "Response A" in posts[0].json["input"]
    (pair,) = json.loads(out.stdout)["pairs"]
    assert pair["win_rate"]["lo"] > 0.5 and pair["unresolved"] == 0
