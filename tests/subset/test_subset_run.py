"""A subset run through the CLI: the same tasks for every arm, the full suite's estimate in
every view, what it saved and what it cost in precision."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, write_suite
from tests.subset.helpers import subset_tasks


def test_a_random_subset_run_reports_the_full_suite(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, task_list=subset_tasks(40))
    store = f"sqlite:///{tmp_path / 's.db'}"
    ran = run_cli("run", str(suite), "--subset", "random:10", "--store", store, "-q")
    assert ran.returncode == 0, ran.stderr
    assert "full-suite estimate from 10 of 40 tasks (a random subset):" in ran.stdout
    assert "on the paired subset" in ran.stdout
    assert "saved: ran 10 of 40 tasks, 40 of 160 trials" in ran.stdout
    shown = run_cli("report", "--json", "--store", store)
    report = json.loads(shown.stdout)
    assert report["estimand"].startswith("the full suite's expected success rate, estimated")
    section = report["subset"]
    base = section["arms"]["base"]
    assert (base["n"], base["N"], base["basis"]) == (10, 40, "design")
    assert base["lo"] <= base["estimate"] <= base["hi"]
    assert section["arms"]["cand"]["lo"] == 0.75  # all passed: 4 failing tasks fit in 30 unseen
    assert section["saving"]["width"] > section["saving"]["width_full"]
    assert report["arms"]["base"]["tasks"] == report["arms"]["cand"]["tasks"] == 10
    history = json.loads(run_cli("history", "test-suite", "--json", "--store", store).stdout)
    arm = next(a for a in history["runs"][-1]["arms"] if a["arm"] == "base")
    assert arm["basis"] == "full-suite estimate from 10 of 40 tasks (a random subset)"
    assert (arm["estimate"], arm["lo"]) == (base["estimate"], base["lo"])  # one number
    (tmp_path / "gate.yaml").write_text("rule: improvement\n")
    gate = run_cli("gate", "latest", "--policy", str(tmp_path / "gate.yaml"), "--store", store)
    said = " ".join(gate.stdout.split())
    assert "on the paired subset, not the full suite (full-suite estimate from 10 of 40" in said
    assert (
        "full suite, estimated (shown, not judged: the verdict is on the paired subset): " in said
    )
    doc = json.loads(
        run_cli(
            "gate", "latest", "--policy", str(tmp_path / "gate.yaml"), "--store", store, "--json"
        ).stdout
    )
    full, delta = doc["full_suite"], section["delta"]
    assert full["estimand"] == "candidate − baseline on the full suite"
    assert full["estimate"] == delta["estimate"] and full["n"] == 10
    assert full["lo"] > delta["lo"]  # at the one-sided policy's 90% two-sided level, not 95%
    assert doc["primary"]["n_tasks"] == 10  # the verdict is the paired subset's
    md = run_cli("report", "--markdown", "--store", store).stdout
    assert "### Full suite (subset run)" in md
    assert f"base: full suite {100 * base['estimate']:.1f}%" in md


def test_a_bad_subset_flag_is_one_line_and_exit_2(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, task_list=subset_tasks(6))
    ran = run_cli(
        "run", str(suite), "--subset", "random:9", "--store", f"sqlite:///{tmp_path}/s.db"
    )
    assert ran.returncode == 2
    assert ran.stderr.strip().count("\n") == 0
    assert "subset" in ran.stderr and "n = 9 tasks but the suite has 6" in ran.stderr
