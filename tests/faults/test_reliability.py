"""The reliability figures: ``benchmarks/reliability.py``'s checked-in full output holds the
promises, and a small seeded sample of it (two SIGKILLs with resumes against a reference run,
a 200-trial run's memory) is recomputed here live."""

from __future__ import annotations

import json

from benchmarks.reliability import measure
from tests.conftest import REPO

FIXTURE = REPO / "benchmarks" / "results" / "reliability.json"


def test_the_checked_in_figures_hold_the_promises():
    doc = json.loads(FIXTURE.read_text())
    rows = {r["scenario"]: r for r in doc["rows"]}
    assert {"sigkill", "postgres_terminated", "postgres_past_window", "memory"} <= set(rows)
    assert any(name.startswith("postgres_stop_") for name in rows)
    for r in doc["rows"]:
        assert r["ok"] and r["lost"] == r["duplicated"] == r["changed"] == 0, r
    kill = rows["sigkill"]
    assert kill["detail"]["kills"] >= 20
    assert kill["detail"]["driver_died_attempts"] == kill["detail"]["attempts_cut"] > 0
    assert rows["postgres_past_window"]["exits"] == [5, 0]
    assert rows["postgres_past_window"]["detail"]["stderr_lines"] == 1
    for name, r in rows.items():
        if name.startswith("postgres_stop_") or name == "postgres_terminated":
            assert r["exits"] == [0], r
    kill_docker, pause = rows["docker_kill"], rows["docker_pause"]
    assert kill_docker["exits"] == [0, 0] and kill_docker["detail"]["kills"] >= 1
    assert kill_docker["detail"]["infra_error_attempts"] >= kill_docker["detail"]["kills"]
    assert pause["detail"]["within_bound"] and pause["exits"] == [0, 0]
    ray = rows["ray_worker_lost"]
    assert ray["exits"] == [0, 0] and ray["trials"] > 0
    assert ray["detail"]["infra_error_attempts"] >= 1  # the node's trials were cut and retried


def test_a_seeded_sample_recomputed_live(tmp_path):
    kill, memory = measure(kills=2, outages=None, memory_trials=200, seed=29)
    assert (kill.lost, kill.duplicated, kill.changed) == (0, 0, 0), kill
    assert kill.detail["kills"] >= 1 and kill.exits[-1] == 0, kill
    assert kill.detail["driver_died_attempts"] == kill.detail["attempts_cut"], kill
    assert memory.ok and memory.trials == 200 and memory.exits == [0], memory
