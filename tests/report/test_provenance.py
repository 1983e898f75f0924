"""Verdicts reached with less isolation than the default are named in every view (issue 22,
points 1 and 2): tasks graded in the agent's own sandbox, and agents run as root on Docker."""

from __future__ import annotations

import json

from harness.analysis.table import Trials
from harness.report.provenance import provenance, provenance_warnings
from tests.cli.test_usage_errors import _main
from tests.conftest import write_suite


def _trials(rows: list[tuple[str, str]]) -> Trials:
    return Trials.from_columns(
        {"task": [t for t, _ in rows], "arm": [a for _, a in rows], "status": [1] * len(rows)}
    )


def test_root_counts_only_where_the_environment_decides_the_agents_user():
    config = {
        "tasks": {
            "a": {"environment": "boxed"},
            "b": {"environment": "rooted", "grade_in_place": "a service it started"},
            "c": {"environment": "rooted"},  # not run: not named
        },
        "environments": {"boxed": {"user": None}, "rooted": {"user": "root"}},
    }
    trials = _trials([("a", "x"), ("b", "x"), ("b", "x"), ("b", "y")])
    found = provenance(config, "docker", trials)
    assert found["agent_root"] == [
        {"task": "b", "why": "environment 'rooted' sets user: root", "trials": {"x": 2, "y": 1}}
    ]
    assert found["graded_in_place"] == [
        {"task": "b", "why": "a service it started", "trials": {"x": 2, "y": 1}}
    ]
    # bwrap maps every agent to an unprivileged uid: user: root changes nothing there
    assert provenance(config, "bwrap", trials)["agent_root"] == []
    assert provenance_warnings(found) == [
        "3 trial(s) of 1 task(s) graded in the agent's own sandbox, not a fresh one: b",
        "3 trial(s) of 1 task(s) ran their agent as root (the environment sets user: root): b",
    ]
    assert provenance_warnings(provenance({}, "docker", trials)) == []


def test_a_multi_step_task_counts_where_its_steps_are_graded():
    """A step with a grading sandbox of its own is not graded in place, even in a task that
    says grade_in_place; a step that says it is counts in a task graded elsewhere."""
    away = {"name": "s1", "grading": {"environment": "v"}, "grade_in_place": None}
    shared = {"name": "s2", "grading": None, "grade_in_place": "a shared verifier"}
    config = {
        "tasks": {
            "all-away": {"grade_in_place": "steps", "steps": [away]},
            "one-here": {"grade_in_place": None, "steps": [away, shared]},
            "inherits": {"grade_in_place": "steps", "steps": [away, {"name": "s3"}]},
        }
    }
    trials = _trials([("all-away", "x"), ("one-here", "x"), ("inherits", "x")])
    found = provenance(config, "docker", trials)["graded_in_place"]
    assert [(e["task"], e["why"]) for e in found] == [
        ("inherits", "steps"),
        ("one-here", "step s2: a shared verifier"),
    ]


def test_a_task_graded_in_place_is_named_in_json_summary_and_markdown(tmp_path):
    tasks = [
        {
            "id": f"t{i}",
            "instruction": f"What is {i} + {i}?",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": 2 * i}],
            "solution": {"answer": str(2 * i)},
        }
        for i in range(3)
    ]
    tasks[1]["grade_in_place"] = "its hidden test needs the server the agent started"
    suite = write_suite(tmp_path / "s", task_list=tasks)
    store = f"sqlite:///{tmp_path}/h.db"
    code, summary, err = _main("run", str(suite), "--store", store, "-q")
    assert code == 0, err
    line = "4 trial(s) of 1 task(s) graded in the agent's own sandbox, not a fresh one: t1"
    code, out, _ = _main("report", "--json", "--store", store)
    data = json.loads(out)
    assert data["provenance"]["graded_in_place"] == [
        {"task": "t1", "why": tasks[1]["grade_in_place"], "trials": {"base": 2, "cand": 2}}
    ]
    assert line in data["warnings"]
    for args in (("report",), ("report", "--markdown"), ("report", "--full")):
        code, text, _ = _main(*args, "--store", store)
        assert code == 0 and line in " ".join(text.split()), (args, text)
    page = tmp_path / "report.html"
    code, _, err = _main("report", "--store", store, "--html", str(page), "-q")
    assert code == 0 and line.replace("'", "&#39;") in " ".join(page.read_text().split()), err
