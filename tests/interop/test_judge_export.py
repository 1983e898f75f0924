"""A judged run's judge verdicts and human labels leave the store in both export formats."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fakes.judge_server import ScriptedJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import judge_grader, judged_suite, rows

CRITERIA = [
    {"id": "correct", "text": "The answer is the right sum."},
    {"id": "terse", "text": "The answer is a bare number."},
]


def test_inspect_logs_carry_judge_scores_and_labels_and_jsonl_round_trips(tmp_path: Path) -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    judge = ScriptedJudge(sensitivity=0.8, specificity=0.8, seed=2, criteria=["correct", "terse"])
    with FakeOpenAI(default=judge) as server:
        suite = judged_suite(tmp_path, judge_grader(server.base_url, criteria=CRITERIA), n_tasks=4)
        db = tmp_path / "store.db"
        out = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=180)
        assert out.returncode in (0, 1), out.stderr
    trials = rows(db)
    run_id, url = trials[0]["run_id"], f"sqlite:///{db}"
    labels = [
        {"trial": r["id"], "passed": k % 2 == 0, "note": f"n{k}"} for k, r in enumerate(trials)
    ]
    labels += [
        {"trial": r["id"], "criterion": "correct", "passed": True, "labeller": "bo"}
        for r in trials[:3]
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in labels))
    out = run_cli("label", run_id, str(path), "--labeller", "ann", "--store", url)
    assert out.returncode == 0, out.stderr
    # ann changes her mind about the first trial twice, bo once about its criterion: the
    # newest label counts, the replaced ones travel as its history.
    for k, again in enumerate(
        [
            [{"trial": trials[0]["id"], "passed": False, "note": "second look"}],
            [
                {"trial": trials[0]["id"], "passed": True, "note": "third look"},
                {
                    "trial": trials[0]["id"],
                    "criterion": "correct",
                    "passed": False,
                    "labeller": "bo",
                },
            ],
        ]
    ):
        relabel = tmp_path / f"relabel{k}.jsonl"
        relabel.write_text("".join(json.dumps(x) + "\n" for x in again))
        out = run_cli("label", run_id, str(relabel), "--labeller", "ann", "--store", url)
        assert out.returncode == 0, out.stderr

    logs = tmp_path / "logs"
    out = run_cli("export", run_id, "--format", "inspect", "-o", str(logs), "--store", url)
    assert out.returncode == 0, out.stderr
    samples = {}
    for file in logs.iterdir():
        log = read_eval_log(str(file))  # Inspect's own reader validates the schema
        arm = log.eval.metadata["harness_arm"]
        samples |= {(arm, s.id, s.epoch): s for s in log.samples or []}
    assert len(samples) == len(trials)
    for k, r in enumerate(trials):
        s = samples[(r["arm"], r["task_id"], r["trial_index"] + 1)]
        judge = json.loads(r["evidence"])["graders"][0]["details"]["judge"]
        for c in judge["criteria"]:
            score = s.scores[f"judge/{c['id']}"]
            assert score.value == ("C" if c["passed"] else "I")
            assert score.explanation == "; ".join(c["reasons"])
            meta = score.metadata
            assert meta["model"] == "fake-model" and meta["setup"] == judge["setup"]
            assert meta["votes"] == c["votes"] and meta["usage"]["calls"] == 1
        assert s.scores["harness"].value == ("C" if r["passed"] else "I")
        ann = s.scores["human/ann"]
        assert ("human/bo/correct" in s.scores) == (k < 3)
        if k == 0:
            assert ann.value == "C" and ann.explanation == "third look"
            assert ann.metadata["source"].endswith("relabel1.jsonl")
            history = ann.metadata["history"]
            assert [(h["value"], h["explanation"]) for h in history] == [
                ("C", "n0"),
                ("I", "second look"),
            ]
            assert history[0]["source"].endswith("labels.jsonl")
            assert history[0]["labelled_at"] <= history[0]["replaced_at"]
            assert history[0]["replaced_at"] == history[1]["labelled_at"]
            bo = s.scores["human/bo/correct"]
            assert bo.value == "I" and [h["value"] for h in bo.metadata["history"]] == ["C"]
        else:
            assert ann.value == ("C" if k % 2 == 0 else "I") and ann.explanation == f"n{k}"
            assert ann.metadata["source"].endswith("labels.jsonl")
            assert ann.metadata["criterion"] == "" and ann.metadata["history"] == []
        assert s.metadata["judge_calls"] == 1
        assert s.metadata["judge_cost_usd"] == pytest.approx(r["judge_cost_usd"])

    # JSON lines carry the same into another store: its Inspect logs are the same files.
    log = tmp_path / "run.jsonl"
    assert run_cli("export", run_id, "-o", str(log), "--store", url).returncode == 0
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    out = run_cli("import-log", str(log), "--store", copy)
    assert out.returncode == 0, out.stderr
    again = tmp_path / "again"
    out = run_cli("export", run_id, "--format", "inspect", "-o", str(again), "--store", copy)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in again.iterdir()) == sorted(p.name for p in logs.iterdir())
    for file in logs.iterdir():
        assert (again / file.name).read_text() == file.read_text()
