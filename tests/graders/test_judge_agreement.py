"""Human labels and `harness judge-agreement` on a run judged by a planted-error judge."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from harness.stats import Calibration, rogan_gladen
from tests.conftest import run_cli
from tests.fakes.judge_server import ScriptedJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import judge_grader, judged_suite, rows


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run: 10 tasks, 3 trials, a simulated arm (p 0.5) and the oracle, judged by a judge
    that passes right answers 85% of the time and fails wrong ones 80% of the time."""
    tmp = tmp_path_factory.mktemp("judged")
    with FakeOpenAI(default=ScriptedJudge(sensitivity=0.85, specificity=0.8, seed=5)) as server:
        suite = judged_suite(tmp, judge_grader(server.base_url), n_tasks=10, trials=3)
        db = tmp / "store.db"
        out = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=240)
        assert out.returncode in (0, 1), out.stderr
    trials = rows(db)
    run_id = trials[0]["run_id"]
    truth = {r["id"]: (r["answer"] or "").strip() == str(2 * int(r["task_id"][1:])) for r in trials}
    return {"tmp": tmp, "db": db, "run": run_id, "trials": trials, "truth": truth}


def cli(judged: dict[str, Any], *args: str) -> Any:
    return run_cli(*args, "--store", f"sqlite:///{judged['db']}", timeout=120)


def test_labels_file_round_trip_and_agreement(judged: dict[str, Any]) -> None:
    trials, truth = judged["trials"], judged["truth"]
    labelled = trials[::2]  # half of the trials, both arms
    lines = [
        json.dumps({"trial": r["id"], "passed": truth[r["id"]], "note": "checked by hand"})
        for r in labelled
    ]
    # The second person labels by arm/task/index; one of their labels disagrees with truth.
    second = [
        {
            "arm": r["arm"],
            "task": r["task_id"],
            "trial_index": r["trial_index"],
            "passed": truth[r["id"]] if k else not truth[r["id"]],
            "labeller": "bo",
        }
        for k, r in enumerate(labelled[:10])
    ]
    path = judged["tmp"] / "labels.jsonl"
    path.write_text("\n".join(lines + [json.dumps(x) for x in second]) + "\n")
    out = cli(judged, "label", judged["run"], str(path), "--labeller", "ann")
    assert out.returncode == 0, out.stderr
    assert f"stored {len(labelled) + 10} labels" in out.stdout
    # Stored beside the trial; the verdicts are untouched.
    con = sqlite3.connect(judged["db"])
    stored = con.execute("SELECT count(*), count(DISTINCT labeller) FROM human_labels").fetchone()
    con.close()
    assert stored == (len(labelled) + 10, 2)
    assert rows(judged["db"]) == trials

    out = cli(judged, "judge-agreement", judged["run"], "--json")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    # Independent count: the judge's verdict (trial passed) against ann's truth, except the
    # trials where ann and bo disagree (a 1-1 split: left out).
    split_ids = {r["id"] for k, r in enumerate(labelled[:10]) if k == 0}
    pairs = [(bool(r["passed"]), truth[r["id"]]) for r in labelled if r["id"] not in split_ids]
    cal = Calibration.of([p for p, _ in pairs], [h for _, h in pairs])
    a = s["agreement"]
    assert a["n"] == len(pairs) and a["tied_labels"] == 1
    assert a["confusion"] == {
        "judge_pass_human_pass": cal.true_pos,
        "judge_fail_human_pass": cal.false_neg,
        "judge_pass_human_fail": cal.false_pos,
        "judge_fail_human_fail": cal.true_neg,
    }
    assert a["sensitivity"]["estimate"] == pytest.approx(cal.sensitivity)
    assert a["specificity"]["estimate"] == pytest.approx(cal.specificity)
    for name in ("accuracy", "sensitivity", "specificity", "precision", "f1"):
        r = a[name]
        assert r["lo"] <= r["estimate"] <= r["hi"] and r["n"] > 0, name
    assert -1 <= a["cohen_kappa"]["lo"] < a["cohen_kappa"]["estimate"] < a["cohen_kappa"]["hi"]
    assert a["krippendorff_alpha"]["labellers"] == 2 and a["krippendorff_alpha"]["n"] == 10
    # The planted judge errs: it is neither perfect nor useless.
    assert 0.5 < cal.sensitivity < 1 or 0.5 < cal.specificity < 1

    c = s["corrected"]
    assert c["n_calibration"] == len(pairs)
    for arm, r in c["arms"].items():
        raw, fixed = r["raw"], r["corrected"]
        assert fixed["estimate"] == pytest.approx(
            rogan_gladen(raw["estimate"], cal.sensitivity, cal.specificity)
        ), arm
        assert fixed["lo"] <= fixed["estimate"] <= fixed["hi"]
        # Both errors are carried: wider than the raw interval, unless cut at 0 or 1 (the
        # judge's concurrent calls make the verdicts, so the rates, differ run to run).
        clipped = fixed["hi"] == 1.0 or fixed["lo"] == 0.0
        assert clipped or fixed["hi"] - fixed["lo"] > raw["hi"] - raw["lo"]
    assert c["delta"]["baseline"] == "base" and c["delta"]["candidate"] == "cand"

    noise = s["judge"]
    assert noise["self_disagreement"]["n"] == 0  # one sample per trial
    assert noise["cost"]["base"]["judge_calls"] == 30 and len(noise["setups"]) == 1

    terminal = cli(judged, "judge-agreement", judged["run"])
    assert "corrected" in terminal.stdout and "Cohen kappa" in terminal.stdout
    assert f"{100 * cal.specificity:.1f}%" in terminal.stdout
    markdown = cli(judged, "judge-agreement", judged["run"], "--markdown")
    assert markdown.stdout.startswith("## Judge")

    # Export carries the judge's evidence and the labels; a copy reports the same numbers.
    log = judged["tmp"] / "run.jsonl"
    out = cli(judged, "export", judged["run"], "-o", str(log))
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    labelled_lines = [x for x in lines if x["type"] == "trial" and x["labels"]]
    assert len(labelled_lines) == len(labelled)
    assert {x["labeller"] for t in labelled_lines for x in t["labels"]} == {"ann", "bo"}
    copy = judged["tmp"] / "copy.db"
    out = run_cli("import-log", str(log), "--store", f"sqlite:///{copy}")
    assert out.returncode == 0, out.stderr
    again = run_cli("judge-agreement", judged["run"], "--json", "--store", f"sqlite:///{copy}")
    assert json.loads(again.stdout) == s


def test_a_bad_labels_line_is_one_line_naming_file_line_and_field(judged: dict[str, Any]) -> None:
    path = judged["tmp"] / "bad.jsonl"
    first = judged["trials"][0]["id"]
    path.write_text(
        json.dumps({"trial": first, "passed": True, "labeller": "x"})
        + "\n"
        + json.dumps({"trial": first, "passed": "yes", "labeller": "x"})
        + "\n"
    )
    out = cli(judged, "label", judged["run"], str(path))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "bad.jsonl:2" in out.stderr and "'passed'" in out.stderr
    path.write_text(json.dumps({"trial": 999999, "passed": True, "labeller": "x"}) + "\n")
    out = cli(judged, "label", judged["run"], str(path))
    assert out.returncode == 2 and "no trial 999999" in out.stderr
