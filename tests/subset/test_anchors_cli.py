"""harness anchors fit|check on a store built by real runs of the simulated agent, a run on
the fitted anchors, and a fit older than the suite's tasks refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_cli

ARMS = [(1.0, 3.0), (2.0, 2.0), (3.0, 1.0), (1.5, 1.5)]


def _write(directory: Path, n_tasks: int = 30) -> Path:
    tasks = [
        {
            "id": f"t{i:02d}",
            "instruction": "say 1",
            "graders": [{"type": "answer_match", "expected": "1"}],
            "solution": {"answer": "1"},
        }
        for i in range(n_tasks)
    ]
    (directory / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    arms = [
        {"name": f"s{j}", "agent": "simulated", "params": {"a": a, "b": b}}
        for j, (a, b) in enumerate(ARMS)
    ]
    suite = {"name": "irt", "seed": 1, "tasks": ["tasks.yaml"], "arms": arms}
    suite.update(sandbox="local", concurrency=16)
    (directory / "suite.yaml").write_text(yaml.safe_dump(suite))
    return directory / "suite.yaml"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    directory = tmp_path_factory.mktemp("anchors")
    suite = _write(directory)
    store = f"sqlite:///{directory / 's.db'}"
    for seed in ("1", "2"):
        ran = run_cli("run", str(suite), "--seed", seed, "--store", store, "-q")
        assert ran.returncode == 0, ran.stderr
    return suite, store


def test_fit_stores_a_versioned_fit_with_its_quality(history: tuple[Path, str]) -> None:
    suite, store = history
    first = run_cli("anchors", "fit", str(suite), "--store", store)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("fit v1 of suite irt: 30 tasks from 8 systems (arms of 2 runs)")
    assert "task SE of difficulty b: median" in first.stdout
    said = " ".join(first.stdout.split())
    assert "split (seed 0, by run): anchors chosen by a fit of 4 systems, scored by a fit" in said
    assert "the scoring half has 4 systems: below 10, anchor intervals undercover" in said
    second = json.loads(run_cli("anchors", "fit", str(suite), "--store", store, "--json").stdout)
    assert second["version"] == "2"
    assert len(second["a"]) == 30 and len(second["quality"]["systems"]) == 8
    assert set(second["quality"]["unplaced"]) <= set(second["a"])
    chose, scored = second["split"]["choose"], second["split"]["score"]
    assert len(chose) == len(scored) == 4 and not {r for r, _ in chose} & {r for r, _ in scored}
    assert len(second["choose"]["a"]) == 30


def test_a_run_on_anchors_names_the_fit_and_check_prints_the_table(
    history: tuple[Path, str],
) -> None:
    suite, store = history
    assert run_cli("anchors", "fit", str(suite), "--store", store).returncode == 0
    ran = run_cli("run", str(suite), "--subset", "anchors:8", "--arm", "s1", "--store", store, "-q")
    assert ran.returncode == 0, ran.stderr
    assert "full-suite estimate from 8 of 30 tasks (an anchor set (2PL), model-based: fit" in (
        " ".join(ran.stdout.split())
    )
    assert "ability" in ran.stdout
    checked = run_cli("anchors", "check", str(suite), "--n", "8", "--store", store, "--json")
    assert checked.returncode == 0, checked.stderr
    doc = json.loads(checked.stdout)
    assert len(doc["rows"]) == 8  # every arm of both full runs; the subset run is no truth
    for method in ("anchors", "random"):
        assert 0 <= doc["summary"][method]["coverage"] <= 1
        assert doc["summary"][method]["mae"] < 0.3


def test_a_fit_older_than_the_tasks_is_refused_in_one_line(
    history: tuple[Path, str], tmp_path: Path
) -> None:
    suite, store = history
    assert run_cli("anchors", "fit", str(suite), "--store", store).returncode == 0
    tasks = yaml.safe_load((suite.parent / "tasks.yaml").read_text())
    tasks["tasks"][3]["instruction"] = "say one"
    copy = tmp_path / "tasks.yaml"
    copy.write_text(yaml.safe_dump(tasks))
    (tmp_path / "suite.yaml").write_text(suite.read_text())
    ran = run_cli("run", str(tmp_path / "suite.yaml"), "--subset", "anchors:5", "--store", store)
    assert ran.returncode == 2
    assert ran.stderr.strip().count("\n") == 0
    assert "task 't03' changed since fit" in ran.stderr and "harness anchors fit" in ran.stderr


def test_fit_without_history_says_so(tmp_path: Path) -> None:
    suite = _write(tmp_path, 5)
    store = f"sqlite:///{tmp_path / 's.db'}"
    ran = run_cli("run", str(suite), "--arm", "s0", "--store", store, "-q")
    assert ran.returncode == 0
    fit = run_cli("anchors", "fit", str(suite), "--store", store)
    assert fit.returncode == 2
    assert "has 1 finished arm-run(s) of today's tasks" in fit.stderr
