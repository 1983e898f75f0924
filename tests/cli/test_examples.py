"""The example agent and grader users copy (examples/custom) work as docs/agents.md says: named
`module:Class`, resolved from the suite's folder, graded, reported."""

from __future__ import annotations

import shutil
import sqlite3

import yaml

from tests.cli.test_usage_errors import _main
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "custom"


def _copy(tmp_path):
    dest = tmp_path / "custom"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_example_agent_and_grader_run_from_the_suite_folder(tmp_path):
    suite = _copy(tmp_path) / "suite.yaml"
    db = tmp_path / "h.db"
    code, out, err = _main("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    assert code == 0, err
    with sqlite3.connect(db) as conn:
        rows = dict(
            conn.execute(
                "SELECT arm || '/' || task_id, group_concat(DISTINCT status) FROM trials "
                "GROUP BY arm, task_id"
            ).fetchall()
        )
    assert rows == {
        "oracle/add-small": "passed",
        "oracle/add-decimals": "passed",
        "oracle/multiply": "passed",
        "arithmetic/add-small": "passed",
        "arithmetic/add-decimals": "passed",
        "arithmetic/multiply": "failed",  # it only adds: the example shows a failure too
    }
    # the custom grader's version is reported (the run ends with the summary; versions
    # are a section of the report)
    code, out, _ = _main("report", "--section", "versions", "--store", f"sqlite:///{db}")
    assert code == 0 and "short_answer" in out


def test_example_grader_params_are_checked(tmp_path):
    folder = _copy(tmp_path)
    tasks = yaml.safe_load((folder / "tasks.yaml").read_text())
    tasks["tasks"][0]["graders"][1]["max_char"] = 3
    (folder / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    code, _, err = _main("run", str(folder / "suite.yaml"), "--store", f"sqlite:///{tmp_path}/h.db")
    assert code == 2 and "tasks[0].graders[1].max_char" in err, err


def test_short_answer_grader_verdicts():
    import asyncio
    import sys

    sys.path.insert(0, str(EXAMPLE))
    try:
        from short_answer_grader import ShortAnswer, ShortAnswerParams
    finally:
        sys.path.remove(str(EXAMPLE))
    from graders.base import Evidence
    from harness.config.models import Task

    task = Task.model_validate({"id": "t", "instruction": "x", "graders": [{"type": "a"}]})
    grader = ShortAnswer(ShortAnswerParams(max_chars=3))
    for answer, passed in (("42", True), ("4242", False), (None, False)):
        v = asyncio.run(grader.grade(Evidence(task=task, answer=answer)))
        assert v.passed is passed and v.reasons
