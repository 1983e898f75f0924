"""The reliability figures: a small seeded sample of ``benchmarks/reliability.py`` (two
SIGKILLs with resumes against a reference run, a 200-trial run's memory), recomputed live."""

from __future__ import annotations

from benchmarks.reliability import measure


def test_a_seeded_sample_recomputed_live(tmp_path):
    kill, memory = measure(kills=2, outages=None, memory_trials=200, seed=29)
    assert (kill.lost, kill.duplicated, kill.changed) == (0, 0, 0), kill
    assert kill.detail["kills"] >= 1 and kill.exits[-1] == 0, kill
    assert kill.detail["driver_died_attempts"] == kill.detail["attempts_cut"], kill
    assert memory.ok and memory.trials == 200 and memory.exits == [0], memory
