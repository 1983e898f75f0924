"""Nightly history over full and subset runs of one suite: both estimate the full suite's
rate, each with its own SE, and every row and move says which it was."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.conftest import run_cli, write_suite
from tests.subset.helpers import subset_tasks

ARMS = [{"name": "base", "agent": "simulated", "params": {"p": 0.6}}]


def _run(suite: Path, store: str, *extra: str) -> None:
    ran = run_cli("run", str(suite), *extra, "--store", store, "-q")
    assert ran.returncode == 0, ran.stderr


def test_history_reads_full_and_subset_runs_as_one_quantity(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, task_list=subset_tasks(40), arms=ARMS)
    store = f"sqlite:///{tmp_path / 's.db'}"
    _run(suite, store)
    _run(suite, store, "--subset", "random:10", "--seed", "7")
    _run(suite, store, "--subset", "stratified:12", "--seed", "8")
    _run(suite, store)
    shown = run_cli("history", "test-suite", "--json", "--sequential", "--store", store)
    rows = [r["arms"][0] for r in json.loads(shown.stdout)["runs"]]
    assert [r["subset_method"] for r in rows] == [None, "random", "stratified", None]
    assert [r["basis"] for r in rows[:2]] == [
        "full run",
        "full-suite estimate from 10 of 40 tasks (a random subset)",
    ]
    assert rows[1]["suite_tasks"] == 40 and rows[1]["n_tasks"] == 10
    assert rows[0]["suite_se"] < rows[1]["suite_se"]  # 40 tasks' trial noise vs a 10-task draw
    for before, now, how in zip(
        rows[:-1],
        rows[1:],
        ["full run → random 10 of 40", "random 10 of 40 → stratified 12 of 40", "stratified"],
        strict=True,
    ):
        move = now["move"]
        assert not move["paired"] and "cannot_pair" not in move
        assert how in move["basis"]
        assert math.isclose(move["estimate"], now["estimate"] - before["estimate"])
        assert math.isclose(move["se"], math.hypot(now["suite_se"], before["suite_se"]))
        assert move["lo"] < move["estimate"] < move["hi"]
    # one season across the kinds of run: the subset nights did not restart it
    assert [r["move"]["look"] for r in rows[1:]] == [2, 3, 4]
    text = run_cli("history", "test-suite", "--store", store).stdout
    assert "rows without *: full runs" in " ".join(text.split())
    assert "difference of full-suite estimates" in " ".join(text.split())


def test_a_subset_of_another_task_set_still_cannot_pair(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, task_list=subset_tasks(40), arms=ARMS)
    store = f"sqlite:///{tmp_path / 's.db'}"
    _run(suite, store)
    suite = write_suite(tmp_path, task_list=subset_tasks(30), arms=ARMS)
    _run(suite, store, "--subset", "random:10")
    shown = run_cli("history", "test-suite", "--json", "--store", store)
    move = json.loads(shown.stdout)["runs"][-1]["arms"][0]["move"]
    assert move["cannot_pair"] == ["different suite tasks (+0 / -10)"]


def test_the_nightly_gate_pools_full_and_subset_nights(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, task_list=subset_tasks(40))
    store = f"sqlite:///{tmp_path / 's.db'}"
    _run(suite, store)
    _run(suite, store, "--subset", "random:10", "--seed", "3")
    _run(suite, store)
    (tmp_path / "gate.yaml").write_text("rule: improvement\nsequential: true\n")
    policy = str(tmp_path / "gate.yaml")
    gate = run_cli("gate", "latest", "--policy", policy, "--json", "--store", store)
    assert gate.stdout, gate.stderr
    record = json.loads(gate.stdout)["sequential"]
    assert record["look"] == 3  # the subset night did not restart the season
    # the subset night is its full-suite delta with the design SE (wider than a full night's)
    assert record["ses"][1] > max(record["ses"][0], record["ses"][2])


def test_history_refuses_a_move_across_a_task_changed_since_the_fit(tmp_path: Path) -> None:
    from tests.subset.test_anchors_cli import _write

    suite = _write(tmp_path)
    store = f"sqlite:///{tmp_path / 's.db'}"
    for seed in ("1", "2"):
        _run(suite, store, "--seed", seed)
    assert run_cli("anchors", "fit", str(suite), "--store", store).returncode == 0
    _run(suite, store, "--subset", "anchors:8", "--arm", "s1")
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(tasks.read_text().replace("say 1", "say one", 1))  # t00 changes
    _run(suite, store, "--arm", "s1")
    _run(suite, store, "--subset", "random:10", "--arm", "s1", "--seed", "5")
    shown = run_cli("history", "irt", "--json", "--store", store)
    rows = [a for r in json.loads(shown.stdout)["runs"] for a in r["arms"] if a["arm"] == "s1"]
    assert rows[2]["subset_method"] == "anchors" and "paired" in rows[2]["move"]
    assert rows[3]["move"]["cannot_pair"] == ["task 't00' changed since fit 1"]
    assert "difference of full-suite estimates" in rows[4]["move"]["basis"]  # same tasks now


def test_a_task_changed_between_a_full_and_a_random_subset_run_is_named() -> None:
    from harness.release.full_suite_rows import why_not_same_quantity

    full = {"tasks": ["t0", "t1", "t2"], "graders": ["g=1"], "images": []}
    part = {"tasks": ["t1"], "graders": ["g=1"], "images": []}
    draw = {"method": "random", "population": [{"id": t} for t in ("t0", "t1", "t2")]}
    same = ({"t0": "a", "t1": "b", "t2": "c"}, {"t1": "b"})
    assert why_not_same_quantity(full, None, part, draw, same) == []
    changed = (same[0], {"t1": "B"})
    assert why_not_same_quantity(full, None, part, draw, changed) == [
        "task 't1' changed between the runs"
    ]
