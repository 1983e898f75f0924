"""The conveniences a user expects: task and arm selection, history by file, gate by the
suite's current rule or a policy file with or without `gate:`, `runs --json`."""

from __future__ import annotations

import json
import sqlite3

import yaml

from tests.cli.test_usage_errors import _main
from tests.conftest import write_suite

GATE = {"rule": "non-inferiority", "margin": 0.5}


def _suite(tmp_path, **kw):
    return write_suite(tmp_path / "s", n_tasks=6, **kw)


def _trials(db) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT DISTINCT arm, task_id FROM trials ORDER BY 1, 2").fetchall()


def test_task_limit_and_arm_select_what_runs(tmp_path):
    db = tmp_path / "h.db"
    suite = _suite(tmp_path)
    argv = ["run", str(suite), "--store", f"sqlite:///{db}", "-q"]
    code, _, err = _main(*argv, "--task", "t1", "--task", "t[45]", "--arm", "cand")
    assert code == 0, err
    assert _trials(db) == [("cand", "t1"), ("cand", "t4"), ("cand", "t5")]
    code, out, err = _main("runs", "--json", "--store", f"sqlite:///{db}")
    [run] = json.loads(out)
    assert run["arms"] == ["cand"] and run["status"] == "finished" and run["resume"] is None

    db2 = tmp_path / "h2.db"
    code, _, err = _main("run", str(suite), "--store", f"sqlite:///{db2}", "-q", "--limit", "2")
    assert code == 0, err
    assert {t for _, t in _trials(db2)} == {"t0", "t1"}


def test_selection_mistakes_are_one_line_exit_2(tmp_path):
    suite = _suite(tmp_path)
    store = f"sqlite:///{tmp_path}/h.db"
    for extra, text in (
        (["--task", "nope*"], "no task id matches"),
        (["--arm", "zzz"], "unknown arm 'zzz'"),
    ):
        code, _, err = _main("run", str(suite), "--store", store, "-q", *extra)
        assert code == 2 and text in err and len(err.strip().splitlines()) == 1, err
    code, _, err = _main("run", str(suite), "--limit", "0")
    assert code == 2 and "--limit" in err


def test_gate_policy_with_or_without_gate_key_and_from_the_suite(tmp_path):
    store = f"sqlite:///{tmp_path}/h.db"
    suite = _suite(tmp_path)  # declares no gate
    assert _main("run", str(suite), "--store", store, "-q")[0] == 0
    code, _, err = _main("gate", "latest", "--store", store)
    assert code == 2 and "declares no gate" in err

    bare, wrapped = tmp_path / "bare.yaml", tmp_path / "wrapped.yaml"
    bare.write_text(yaml.safe_dump(GATE))
    wrapped.write_text(yaml.safe_dump({"gate": GATE}))
    verdicts = set()
    for policy in (bare, wrapped):
        code, out, err = _main(
            "gate", "latest", "--policy", str(policy), "--json", "--store", store
        )
        assert code in (0, 10, 11, 12), err
        verdicts.add(json.loads(out)["verdict"])
    assert len(verdicts) == 1

    # The suite gains a gate after the run: --suite applies it to the older run.
    doc = yaml.safe_load(suite.read_text())
    suite.write_text(yaml.safe_dump({**doc, "gate": GATE}))
    code, out, err = _main("gate", "latest", "--suite", str(suite), "--json", "--store", store)
    assert code in (0, 10, 11, 12), err
    assert json.loads(out)["verdict"] in verdicts

    wrapped.write_text(yaml.safe_dump({"gate": {**GATE, "margn": 1}}))
    code, _, err = _main("gate", "latest", "--policy", str(wrapped), "--store", store)
    assert code == 2 and "gate.margn" in err


def test_history_takes_the_suite_file_or_its_name(tmp_path):
    store = f"sqlite:///{tmp_path}/h.db"
    suite = _suite(tmp_path)
    assert _main("run", str(suite), "--store", store, "-q")[0] == 0
    by_name = json.loads(_main("history", "test-suite", "--json", "--store", store)[1])
    by_file = json.loads(_main("history", str(suite), "--json", "--store", store)[1])
    assert by_name == by_file
    assert len(by_file["runs"]) == 1
