"""Multi-step tasks (``steps:``), through the CLI on a real sandbox: the steps run in order
in one sandbox, each graded in place with its own hidden tests; per-step rewards and the
trajectory's step notes are on the row; ``min_reward`` stops the trial early (later steps
not run, scoring 0); the trial passes only when every step passes and scores the mean (or
the last step's reward); the report's steps section shows the progress per step; a steps
task that is not graded in place grades each step in a fresh grading sandbox while the
agent's sandbox lives on."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

from tests.conftest import run_cli

CHECK = 'test "$(cat {file} 2>/dev/null)" = {want} && echo 1 > reward.txt || echo 0 > reward.txt'
GRADER = {"type": "tests_script", "reward_file": "reward.txt", "timeout_s": 30}


def _step(name: str, file: str, writes: str, want: str, **extra) -> dict:
    return {
        "name": name,
        "instruction": f"write {want} into {file}",
        "solution": {"commands": [f"echo {writes} > {file}"]},
        "hidden": f"hidden/{name}",
        **extra,
    }


def _suite(tmp: Path) -> Path:
    env = tmp / "environments" / "box"
    env.mkdir(parents=True)
    (env / "environment.yaml").write_text("name: box\nimage: {ref: harness-base:latest}\n")
    tasks = tmp / "tasks"
    for name, file, want in [("one", "a.txt", "A"), ("two", "b.txt", "B"), ("three", "c.txt", "C")]:
        (tasks / "hidden" / name).mkdir(parents=True)
        (tasks / "hidden" / name / "test.sh").write_text(CHECK.format(file=file, want=want) + "\n")
    common = {"environment": "box", "graders": [GRADER], "grade_in_place": "steps"}
    steps = [("one", "a.txt", "A"), ("two", "b.txt", "B"), ("three", "c.txt", "C")]
    doc = {
        "tasks": [
            {  # every step solved
                "id": "all", "instruction": "x", **common,
                "steps": [_step(n, f, w, w) for n, f, w in steps],
            },
            {  # step two's solution is wrong: steps one and three still count, mean 2/3
                "id": "middle", "instruction": "x", **common,
                "steps": [_step(n, f, "Z" if n == "two" else w, w) for n, f, w in steps],
            },
            {  # step one wrong under min_reward: the trial stops there
                "id": "stops", "instruction": "x", **common,
                "steps": [
                    _step(n, f, "Z" if n == "one" else w, w, **({"min_reward": 1.0} if n == "one" else {}))
                    for n, f, w in steps
                ],
            },
            {  # the last step's reward is the score
                "id": "final", "instruction": "x", **common, "step_reward": "final",
                "steps": [_step(n, f, "Z" if n == "one" else w, w) for n, f, w in steps],
            },
        ]
    }  # fmt: skip
    (tasks / "tasks.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    suite = {
        "name": "steps",
        "tasks": ["tasks/tasks.yaml"],
        "environments_dir": "environments",
        "sandbox": "unsafe-local",
        "arms": [{"name": "oracle", "agent": "oracle"}, {"name": "noop", "agent": "noop"}],
    }
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    return tmp / "suite.yaml"


def test_steps_run_in_order_with_per_step_rewards_and_early_stop(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    db = tmp_path / "s.db"
    done = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = sqlite3.connect(db).execute(
        "select arm, task_id, status, score, reason, evidence, id from trials"
    )
    got = {(arm, task): (status, score, reason, json.loads(ev), tid)
           for arm, task, status, score, reason, ev, tid in rows}  # fmt: skip
    rewards = {k: [s["reward"] for s in v[3]["steps"]] for k, v in got.items()}
    assert rewards[("oracle", "all")] == [1.0, 1.0, 1.0]
    assert got[("oracle", "all")][:2] == ("passed", 1.0)
    assert rewards[("oracle", "middle")] == [1.0, 0.0, 1.0]
    assert got[("oracle", "middle")][0] == "failed"
    assert abs(got[("oracle", "middle")][1] - 2 / 3) < 1e-9
    assert rewards[("oracle", "stops")] == [0.0, None, None]
    assert got[("oracle", "stops")][:2] == ("failed", 0.0)
    assert "step two: not run" in got[("oracle", "stops")][2]
    assert rewards[("oracle", "final")] == [0.0, 1.0, 1.0]
    assert got[("oracle", "final")][:2] == ("failed", 1.0)
    # noop: every step runs (no min_reward) and fails, except where the trial stops.
    assert rewards[("noop", "all")] == [0.0, 0.0, 0.0]
    assert rewards[("noop", "stops")] == [0.0, None, None]
    # The trajectory: a note opens each step, and each step names its events.
    tid = got[("oracle", "all")][4]
    notes = [
        (step, content)
        for step, content in sqlite3.connect(db).execute(
            "select step, content from trajectory_events where trial_id = ? and kind = 'note' "
            "order by step",
            (tid,),
        )
    ]
    assert [c for _, c in notes] == [
        f"step {i} of 3: {n}" for i, n in enumerate(["one", "two", "three"], 1)
    ]
    spans = [s["events"] for s in got[("oracle", "all")][3]["steps"]]
    assert [a for a, _ in spans] == [s for s, _ in notes] and all(a < b for a, b in spans)
    # The report's steps section: per arm, task and step, from those rows.
    store = f"sqlite:///{db}"
    data = json.loads(run_cli("report", "--store", store, "--json").stdout)
    rows = {(r["arm"], r["task"], r["step"]): r for r in data["steps"]}
    stops = rows[("oracle", "stops", "two")]
    assert (stops["trials"], stops["reached"], stops["passed"], stops["mean_reward"]) == (
        1,
        0,
        0,
        0,
    )
    middle = rows[("oracle", "middle", "three")]
    assert (middle["reached"], middle["passed"], middle["rate"]) == (1, 1, 1.0)
    assert abs(middle["lo"] - 0.2065) < 1e-3 and middle["hi"] == 1.0  # Wilson, 1 of 1, 95%
    text = run_cli("report", "--store", store, "--section", "steps").stdout
    assert "oracle · stops" in text
    assert "2. two: reached 0/1, passed 0/1 0.0% [0.0%, 79.3%], mean reward 0.00" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    markdown = run_cli("report", "--store", store, "--markdown").stdout
    assert "| oracle | middle | 2. two | 1/1 | 0/1 0.0% [0.0%, 79.3%] | 0.00 |" in markdown


def test_steps_not_graded_in_place_get_a_fresh_grading_sandbox_each(tmp_path: Path) -> None:
    """Without ``grade_in_place`` each step is graded in a fresh grading sandbox with the
    agent's work dir copied in, while the agent's sandbox lives on: step ``keep`` passes only
    when step one's file is still there and the file step one's grader wrote is not (the
    grader wrote it in a sandbox of its own)."""
    suite = _suite(tmp_path)
    hidden = tmp_path / "tasks" / "hidden"
    (hidden / "leaves").mkdir()
    (hidden / "leaves" / "test.sh").write_text(
        "echo graded > graded.txt; " + CHECK.format(file="a.txt", want="A") + "\n"
    )
    (hidden / "keep").mkdir()
    (hidden / "keep" / "test.sh").write_text(
        "test ! -e graded.txt && " + CHECK.format(file="a.txt", want="A") + "\n"
    )
    path = tmp_path / "tasks" / "tasks.yaml"
    doc = yaml.safe_load(path.read_text())
    task = doc["tasks"][0]
    del task["grade_in_place"]
    task["steps"] = [
        _step("one", "a.txt", "A", "A", hidden="hidden/leaves"),
        {"name": "keep", "instruction": "keep it", "solution": {"commands": ["true"]},
         "hidden": "hidden/keep"},
    ]  # fmt: skip
    doc["tasks"] = [task]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    db = tmp_path / "s.db"
    done = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", "--arm", "oracle")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ((status, ev),) = sqlite3.connect(db).execute("select status, evidence from trials")
    evidence = json.loads(ev)
    assert [s["reward"] for s in evidence["steps"]] == [1.0, 1.0], evidence["steps"]
    assert (status, evidence["graded_in_place"]) == ("passed", None)
    # The same steps graded in place: the grader's file stays in the agent's sandbox.
    task["grade_in_place"] = "steps"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", "--arm", "oracle")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = sqlite3.connect(db).execute("select evidence from trials order by started_at")
    last = json.loads(rows.fetchall()[-1][0])
    assert [s["reward"] for s in last["steps"]] == [1.0, 0.0], last["steps"]


def test_a_step_graded_in_place_has_no_grading_of_its_own(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    path = tmp_path / "tasks" / "tasks.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["tasks"][0]["steps"][1].update(grade_in_place="why", grading={"root": True})
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_cli("run", str(suite), "-q")
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert "steps[1].grading.root" in line and "only network and internet" in line, line
