"""compare refuses unpairable sides, naming each difference; history says when it cannot pair."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from harness.errors import ConfigError
from harness.release.api import compare_runs, history
from harness.report.render.release import compare_markdown
from harness.store import Store

from .helpers import make_run, row, seed001


@pytest.fixture
def store(tmp_path):
    return Store(f"sqlite:///{tmp_path / 's.db'}")


def _rows(arm, passes, graders=None, tasks=None):
    tasks = tasks or [f"t{i:02d}" for i in range(len(passes))]
    out = []
    for t, p in zip(tasks, passes, strict=True):
        r = row(arm, t, p)
        if graders:
            r["grader_versions"] = graders
        out.append(r)
    return out


def test_within_one_run_compare_pairs_and_defaults_to_primary_arms(store):
    make_run(
        store,
        "r1",
        seed001("A"),
        arms=["base", "cand"],
        suite={"name": "s", "report": {"primary": {"baseline": "base", "candidate": "cand"}}},
    )
    c = compare_runs(store, "r1", "r1")
    assert (c["baseline_side"], c["candidate_side"]) == ("r1:base", "r1:cand")
    assert not c["differences"] and not c["refused"]
    assert c["table"]["fixed"] == 5 and c["p_values"]["greater"] == pytest.approx(0.03125)
    assert "no A/A arm" in compare_markdown(c)


def test_refuses_different_grader_versions_and_task_sets(store):
    make_run(store, "r1", _rows("base", [1] * 20), arms=["base"])
    make_run(
        store,
        "r2",
        _rows(
            "base",
            [1] * 22,
            graders={"answer_match": "2"},
            tasks=[f"t{i:02d}" for i in range(2, 24)],
        ),
        arms=["base"],
    )
    c = compare_runs(store, "r1", "r2")
    assert c["refused"] and "estimate" not in c
    checks = {d["check"]: d["message"] for d in c["differences"]}
    assert (
        "answer_match" in checks["graders"] and "1 in r1:base vs 2 in r2:base" in checks["graders"]
    )
    assert "2 only in r1:base (t00, t01)" in checks["tasks"]
    assert "4 only in r2:base" in checks["tasks"]
    forced = compare_runs(store, "r1", "r2", force=True)
    assert forced["forced"] and forced["n_tasks"] == 18 and forced["dropped"]["n"] == 6
    assert "within_run" in forced and not forced["within_run"]


def test_refuses_different_budgets_and_environment_versions(store):
    tasks = {"t00": {"id": "t00", "environment": "e"}}
    make_run(
        store,
        "r1",
        _rows("base", [1]),
        arms=["base"],
        tasks=tasks,
        suite={"name": "s", "budgets": {"max_steps": 20}},
    )
    make_run(
        store,
        "r2",
        _rows("base", [1]),
        arms=["base"],
        tasks=tasks,
        suite={"name": "s", "budgets": {"max_steps": 50}},
    )
    store.update_run(
        "r2", config={**store.get_run("r2").config, "environments": {"e": {"version": "2"}}}
    )
    c = compare_runs(store, "r1", "r2")
    msgs = " | ".join(d["message"] for d in c["differences"])
    assert "budget max_steps: 20 in r1:base vs 50 in r2:base" in msgs
    assert "environment 'e' version None in r1:base vs 2 in r2:base" in msgs


def test_a_cli_arm_pairs_on_the_task_image_under_its_cli_layer(store):
    """A ready-made agent's trials ran the task image plus its CLI (``image_id``); they pair
    with another arm's on the task image underneath, and only on that."""
    task_image, cli_image, other = "sha256:" + "a" * 64, "sha256:" + "b" * 64, "sha256:" + "c" * 64
    base = [r | {"image_id": task_image, "task_image_id": task_image} for r in seed001("A")]
    rows = [r | {"image_id": cli_image} if r["arm"] == "cand" else r for r in base]
    make_run(store, "r1", rows, arms=["base", "cand"])
    c = compare_runs(store, "r1:base", "r1:cand")
    assert not c["differences"] and not c["refused"] and c["table"]["fixed"] == 5
    moved = [r | {"task_image_id": other} if r["arm"] == "cand" else r for r in rows]
    make_run(store, "r2", moved, arms=["base", "cand"])
    c = compare_runs(store, "r2:base", "r2:cand")
    assert c["refused"]
    assert [d["check"] for d in c["differences"]] == ["images"]
    assert "aaaaaaaaaaaa vs cccccccccccc" in c["differences"][0]["message"]


def test_unknown_arm_is_a_config_error(store):
    make_run(store, "r1", _rows("base", [1]), arms=["base"])
    with pytest.raises(ConfigError, match="no arm 'x'"):
        compare_runs(store, "r1:x", "r1")


def test_history_lists_runs_and_says_when_they_cannot_be_paired(store):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    make_run(
        store,
        "n1",
        _rows("base", [1] * 15 + [0] * 5) + _rows("base-aa", [1] * 15 + [0] * 5),
        arms=["base", "base-aa"],
        suite={"name": "s", "aa": True},
        started=t0,
    )
    make_run(
        store,
        "n2",
        _rows("base", [1] * 10 + [0] * 10) + _rows("base-aa", [1] * 10 + [0] * 10),
        arms=["base", "base-aa"],
        suite={"name": "s", "aa": True},
        started=t0 + timedelta(days=1),
    )
    make_run(
        store,
        "n3",
        _rows("base", [1] * 20, graders={"answer_match": "9"}),
        arms=["base"],
        started=t0 + timedelta(days=2),
    )
    h = history(store, "s")
    runs = h["runs"]
    assert [r["run_id"] for r in runs] == ["n1", "n2", "n3"]
    first = runs[0]["arms"][0]
    assert first["rate"] == pytest.approx(0.75) and first["lo"] < 0.75 < first["hi"]
    assert first["n_tasks"] == 20 and first["cost_usd"] == pytest.approx(0.2)
    move = runs[1]["arms"][0]["move"]
    assert move["paired"] and move["estimate"] == pytest.approx(-0.25)
    assert move["beyond_noise_floor"] is True  # the A/A arm of n2 did not move at all
    last = runs[2]["arms"][0]["move"]
    assert not last["paired"] and "different graders" in last["cannot_pair"][0]
