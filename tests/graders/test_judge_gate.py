"""The release gate on judge-corrected rates (``gate: quantity: corrected``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harness.config.models import GatePolicy
from tests.conftest import run_cli, write_suite
from tests.fakes.judge_server import ScriptedJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import judge_grader, rows, task

PAIR = {"baseline": "base", "candidate": "cand"}


@pytest.fixture(scope="module")
def strict_judge(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """40 tasks (each its own cluster), 5 trials; the oracle (right every time: true rate 1)
    against a simulated arm (p 0.5), judged by a strict judge that passes only half of the
    right answers (sensitivity 0.5) and fails 95% of the wrong ones. The candidate's judged
    rate is then about 0.5, under a bar of 0.7 it truly clears."""
    tmp = tmp_path_factory.mktemp("judge-gate")
    with FakeOpenAI(default=ScriptedJudge(sensitivity=0.5, specificity=0.95, seed=1)) as server:
        grader = judge_grader(server.base_url)
        tasks = [{**task(i, grader), "cluster": f"c{i}"} for i in range(40)]
        gate = {"rule": "threshold", "bar": 0.7, "quantity": "corrected", "primary": PAIR}
        suite = write_suite(tmp, task_list=tasks, trials=5, gate=gate)
        db = tmp / "store.db"
        out = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=600)
        assert out.returncode in (0, 1), out.stderr
    trials = rows(db)
    return {"tmp": tmp, "suite": suite, "db": db, "run": trials[0]["run_id"], "trials": trials}


def cli(ctx: dict[str, Any], *args: str) -> Any:
    return run_cli(*args, "--store", f"sqlite:///{ctx['db']}", timeout=120)


def policy_file(tmp: Path, name: str, **policy: Any) -> str:
    path = tmp / name
    path.write_text(json.dumps({"primary": PAIR, **policy}))
    return str(path)


def test_the_corrected_gate_is_right_where_the_raw_one_is_wrong(strict_judge: dict) -> None:
    ctx = strict_judge
    # Without labels there is nothing to correct with: one line naming the file and field.
    out = cli(ctx, "gate", ctx["run"])
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0
    assert f"{ctx['suite']}: field 'gate.quantity'" in out.stderr
    assert "needs human labels" in out.stderr and "harness label" in out.stderr
    assert "harness view" in out.stderr  # or label them on their pages

    truth = {
        r["id"]: (r["answer"] or "").strip() == str(2 * int(r["task_id"][1:]))
        for r in ctx["trials"]
    }
    labels = ctx["tmp"] / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({"trial": t, "passed": p}) + "\n" for t, p in truth.items())
    )
    assert cli(ctx, "label", ctx["run"], str(labels), "--labeller", "ann").returncode == 0
    cand = [truth[r["id"]] for r in ctx["trials"] if r["arm"] == "cand"]
    assert all(cand)  # the oracle's true rate is 1: above the bar, the right call is to ship

    corrected = cli(ctx, "gate", ctx["run"], "--json")
    assert corrected.returncode == 0, corrected.stderr  # meets the bar
    g = json.loads(corrected.stdout)
    q = g["quantity"]
    assert g["verdict_label"] == "meets the bar" and q["used"] == "corrected"
    assert q["corrected"]["lo"] > 0.7 and q["corrected"]["n_calibration"] == 400
    assert q["raw_verdict"] == "below the bar"
    # The threshold rule reads decision bounds as careful as the raw rule's: never inside
    # the corrected interval judge-agreement prints at the gate's level (90%).
    agreement = cli(ctx, "judge-agreement", ctx["run"], "--json", "--confidence", "0.9")
    shown = json.loads(agreement.stdout)["corrected"]
    interval = shown["arms"]["cand"]["corrected"]
    assert "decision bounds" in q["corrected"]["method"]
    assert q["corrected"]["lo"] <= interval["lo"] and q["corrected"]["hi"] >= interval["hi"]
    # The raw reading of the same run (the same rule, quantity raw) is the wrong call.
    raw_policy = policy_file(ctx["tmp"], "raw.json", rule="threshold", bar=0.7)
    raw = cli(ctx, "gate", ctx["run"], "--policy", raw_policy, "--json")
    assert raw.returncode == 12, raw.stderr  # below the bar
    r = json.loads(raw.stdout)
    assert r["quantity"]["used"] == "raw" and r["threshold"]["hi"] < 0.7
    assert q["corrected"]["raw"] == pytest.approx(r["threshold"]["estimate"])
    # The output says which quantity the rule read, in the terminal and in Markdown.
    terminal = cli(ctx, "gate", ctx["run"]).stdout.replace("\n", " ")
    assert "quantity: corrected for judge error" in terminal and "raw rates say below" in terminal
    assert "quantity: raw rates" in cli(ctx, "gate", ctx["run"], "--policy", raw_policy).stdout
    assert "quantity: corrected" in cli(ctx, "gate", ctx["run"], "--markdown").stdout

    # A comparative rule reads the corrected paired delta: the number judge-agreement prints
    # at the gate's interval level (one-sided 95%: the 90% interval).
    better = policy_file(ctx["tmp"], "improve.json", rule="improvement", quantity="corrected")
    d = json.loads(cli(ctx, "gate", ctx["run"], "--policy", better, "--json").stdout)
    delta = shown["delta"]["corrected"]
    used = d["quantity"]["corrected"]
    assert d["verdict"] == "improvement" and used["confidence"] == pytest.approx(0.9)
    assert {**used, "confidence": 0.9} == delta
    assert delta["estimate"] > d["primary"]["estimate"]  # the judge's noise shrank the raw delta


def test_corrected_is_not_read_sequentially() -> None:
    with pytest.raises(ValidationError, match="one run at a time"):
        GatePolicy.model_validate(
            {"rule": "improvement", "quantity": "corrected", "sequential": True}
        )
    assert GatePolicy.model_validate({"rule": "improvement"}).quantity == "raw"
