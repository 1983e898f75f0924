"""`harness pairwise RUN_A:ARM RUN_B:ARM RUN_C:ARM`: three runs of one suite, each with one
agent of a planted quality, judged against each other by a scripted judge endpoint; and the
runs that cannot be compared."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.store import SCHEMA_VERSION, Store
from harness.store.pairwise import run_judgements
from tests.conftest import run_cli, trial_page, write_suite
from tests.fakes.judge_server import PairwiseJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import rows
from tests.graders.test_pairwise import judge_file

AGENTS = {  # planted quality: best > mid > weak
    "best": {"agent": "oracle"},
    "mid": {"agent": "simulated", "params": {"p": 0.6}},
    "weak": {"agent": "simulated", "params": {"p": 0.2}},
}
N_TASKS, TRIALS, CLUSTERS = 12, 2, 6


def _run(
    tmp: Path,
    name: str,
    url: str,
    arms: list[dict[str, Any]],
    tasks: list[dict] | None = None,
    **suite: Any,
) -> str:
    """One run of the suite in its own directory; its run id."""
    path = write_suite(
        tmp / name,
        task_list=tasks,
        n_tasks=N_TASKS,
        n_clusters=CLUSTERS,
        arms=arms,
        trials=TRIALS,
        **suite,
    )
    out = run_cli("run", str(path), "--store", url, "-q", timeout=240)
    assert out.returncode in (0, 1), out.stderr
    found = re.search(r"run id: (\S+)", out.stderr)
    assert found, out.stderr
    return found.group(1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("pairwise_runs")
    db = tmp / "store.db"
    url = f"sqlite:///{db}"
    ids = {q: _run(tmp, q, url, [{"name": "agent", **spec}]) for q, spec in AGENTS.items()}
    return {"tmp": tmp, "db": db, "url": url, "ids": ids}


def _pairwise(runs: dict[str, Any], judge: Path, *args: str) -> Any:
    return run_cli("pairwise", *args, "--judge", str(judge), "--store", runs["url"], timeout=180)


def test_three_runs_are_rated_in_their_planted_order_and_a_rerun_costs_nothing(
    runs: dict[str, Any],
) -> None:
    ids = runs["ids"]
    sides = [f"{ids[q]}:agent" for q in ("weak", "best", "mid")]
    with FakeOpenAI(default=PairwiseJudge(accuracy=0.9, position_bias=0.2, seed=4)) as server:
        path = judge_file(runs["tmp"], "judge.yaml", server.base_url)
        out = _pairwise(runs, path, *sides, "--json")
        assert out.returncode == 0, out.stderr
        calls = len(server.model_requests())
        # The sides named the other way round: every stored judgement is read mirrored.
        back = _pairwise(runs, path, *reversed(sides), "--json")
        assert back.returncode == 0, back.stderr
        assert len(server.model_requests()) == calls
        text = _pairwise(runs, path, *sides)
        md = _pairwise(runs, path, *sides, "--markdown")
    s, r = json.loads(out.stdout), json.loads(back.stdout)
    cells = N_TASKS * TRIALS
    assert calls == 3 * cells * 2 == s["new_calls"] and s["skipped"] == {}
    assert r["new_calls"] == 0 and r["reused"] == calls
    assert s["run_id"] is None and sorted(s["runs"]) == sorted(ids.values())
    assert s["arms"] == sides
    ratings = s["ratings"]["arms"]
    best, mid, weak = (ratings[f"{ids[q]}:agent"] for q in ("best", "mid", "weak"))
    assert best["rating"] > mid["rating"] > weak["rating"]
    assert best["lo"] > weak["hi"]  # the intervals tell the ends apart
    for x in (best, mid, weak):
        assert x["lo"] <= x["rating"] <= x["hi"] and x["hi"] - x["lo"] > 0
    assert s["ratings"]["n_clusters"] == CLUSTERS and s["ratings"]["n"] == 3 * cells
    # The same fit whichever way round the sides were named.
    for side, x in ratings.items():
        assert r["ratings"]["arms"][side]["rating"] == pytest.approx(x["rating"], abs=1e-6)
    by_pair = {(p["arm_a"], p["arm_b"]): p for p in s["pairs"]}
    weak_vs_best = by_pair[(sides[0], sides[1])]["win_rate"]  # in the order named
    assert weak_vs_best["hi"] < 0.5 and weak_vs_best["unit"] == "cluster"

    # Stored with both runs: the first trial's run and the second's.
    got = rows(runs["db"], "pairwise_judgements")
    assert len(got) == calls and all(g["run_b"] not in (None, g["run_id"]) for g in got)
    trials = {t["id"]: t for t in rows(runs["db"])}
    for g in got:
        a, b = trials[g["trial_a"]], trials[g["trial_b"]]
        assert (a["run_id"], b["run_id"]) == (g["run_id"], g["run_b"])
        assert (a["task_id"], a["trial_index"]) == (b["task_id"], b["trial_index"])
        assert a["seed"] == b["seed"]  # the same trial seed on both sides
    # A run's own report and export hold only judgements within it: none here.
    one = ids["best"]
    report = json.loads(run_cli("report", one, "--json", "--store", runs["url"]).stdout)
    assert report.get("pairwise") is None
    page = trial_page(runs["db"], got[0]["trial_a"])
    assert f"{got[0]['run_b']}:agent (trial {got[0]['trial_b']})" in page

    assert "Pairwise judging across runs" in text.stdout and "Bradley–Terry" in text.stdout
    assert f"{sides[1]} vs {sides[0]}" not in text.stdout  # pairs in the order named
    assert f"{sides[0]} vs {sides[1]}" in text.stdout
    assert md.stdout.startswith("## Pairwise judging") and "across runs" in md.stdout


def _refused(out: Any, *words: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr, out.stderr
    for w in words:
        assert w in out.stderr, (w, out.stderr)


def test_runs_whose_tasks_differ_or_share_none_are_refused_before_any_call(
    runs: dict[str, Any],
) -> None:
    ids, tmp, url = runs["ids"], runs["tmp"], runs["url"]
    reworded = [
        {
            "id": f"t{i}",
            "instruction": f"What is {i} + {i}?" + (" Answer fast." if i == 3 else ""),
            "cluster": f"c{i % CLUSTERS}",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": 2 * i}],
            "solution": {"answer": str(2 * i)},
        }
        for i in range(N_TASKS)
    ]
    arms = [{"name": "agent", "agent": "oracle"}]
    changed = _run(tmp, "changed", url, arms, reworded)
    other = [dict(t, id=f"u{i}") for i, t in enumerate(reworded)]
    disjoint = _run(tmp, "disjoint", url, arms, other)
    two = _run(tmp, "two", url, [{"name": "x", "agent": "oracle"}, {"name": "y", **AGENTS["mid"]}])
    best = f"{ids['best']}:agent"
    with FakeOpenAI(default=PairwiseJudge()) as server:
        path = judge_file(tmp, "refuse.yaml", server.base_url)
        _refused(
            _pairwise(runs, path, best, f"{changed}:agent"),
            "task definitions",
            "1 task(s) (t3)",
            f"{changed}:agent",
        )
        _refused(_pairwise(runs, path, best, disjoint), "share no task")
        _refused(_pairwise(runs, path, best, two), "name one as RUN:ARM", "2 arms (x, y)")
        _refused(_pairwise(runs, path, best, best), "named twice")
        _refused(_pairwise(runs, path, best), "two sides or more")
        _refused(_pairwise(runs, path, best, f"{two}:z"), "no arm 'z'")
        _refused(_pairwise(runs, path, best, f"{two}:x", "--arm", "x"), "'--arm'")
        assert server.model_requests() == []  # refused before any judge call
        # Two arms of one run named as sides compare as within it; tasks need not match
        # the other runs' to be refused: sides of one run never are.
        ok = _pairwise(runs, path, f"{two}:x", f"{two}:y", "--json")
        assert ok.returncode == 0, ok.stderr
        assert json.loads(ok.stdout)["pairs"][0]["comparisons"] == N_TASKS * TRIALS
        # Another suite seed: compared by trial index, and said so in every view.
        reseeded = _run(tmp, "reseeded", url, arms, seed=2)
        # Against a run of this test's own, so the three shared runs' logs stay as they are
        # for the export test (a judgement with a run that is never imported stays pending).
        xs = f"{two}:x"
        views = {v: _pairwise(runs, path, xs, reseeded, v) for v in ("--json", "--markdown")}
    for view, out in views.items():
        assert out.returncode == 0, out.stderr
        assert f"{reseeded} 2): trials pair by task and trial index" in out.stdout, view
    (note,) = json.loads(views["--json"].stdout)["notes"]
    assert f"{two} 1, " in note


def test_a_store_made_before_judgements_across_runs_opens_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    """Schema 12 (no ``run_b``) migrates in place: the column and its index are added and
    the judgements stored before read as judgements within their run."""
    path = tmp_path / "old.db"
    Store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:  # rebuilt as v11 made it (no run_b, no its key)
        table = "SELECT sql FROM sqlite_master WHERE tbl_name = 'pairwise_judgements' AND "
        (ddl,) = conn.execute(table + "type = 'table'").fetchone()
        others = [sql for (sql,) in conn.execute(table + "type = 'index' AND sql IS NOT NULL")]
        old = re.sub(r",\s*FOREIGN KEY\(run_b\) REFERENCES runs \(id\)", "", ddl)
        old = re.sub(r"\s*run_b VARCHAR,", "", old)
        assert "run_b" not in old
        conn.execute("DROP TABLE pairwise_judgements")
        conn.execute(old)
        for sql in others:
            if "run_b" not in sql:
                conn.execute(sql)
        conn.execute("DELETE FROM schema_version WHERE version > 12")
        conn.execute(
            "INSERT INTO pairwise_judgements (run_id, setup, judge_model, arm_a, arm_b, "
            "task_id, variant, trial_index, trial_a, trial_b, shown_first, verdict, reason, "
            "latency_s, judged_at) VALUES ('r', 's', 'm', 'x', 'y', 't', '', 0, 1, 2, 'A', "
            "'A', '', 0.0, '2026-01-01 00:00:00')"
        )
    store = Store(f"sqlite:///{path}")
    assert store.migrate() == SCHEMA_VERSION
    (kept,) = run_judgements(store.engine, "r")
    assert (kept.arm_a, kept.trial_b, kept.run_b) == ("x", 2, None)
    store.close()
    with sqlite3.connect(path) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(pairwise_judgements)")}
        indexes = {r[1] for r in conn.execute("PRAGMA index_list(pairwise_judgements)")}
    assert "run_b" in columns and "ix_pairwise_judgements_run_b" in indexes


def test_the_judge_file_for_sides_is_checked_first(runs: dict[str, Any]) -> None:
    bad = runs["tmp"] / "bad.yaml"
    bad.write_text(yaml.safe_dump({"model": {"name": "m"}, "reeds": ["answer"]}))
    ids = runs["ids"]
    _refused(
        _pairwise(runs, bad, f"{ids['best']}:agent", f"{ids['mid']}:agent"), "bad.yaml", "'reeds'"
    )


def test_judgements_across_runs_leave_with_each_run_and_come_back_linked(
    runs: dict[str, Any],
) -> None:
    """Each run's log carries its judgements across runs; importing the logs in any order
    links them once the other run is there (counted meanwhile), and exporting the copies
    gives the same bytes."""
    ids, tmp = runs["ids"], runs["tmp"]
    sides = [f"{ids[q]}:agent" for q in ("best", "mid", "weak")]
    copy = f"sqlite:///{tmp / 'copy.db'}"
    logs = {q: tmp / f"{q}.jsonl" for q in ("best", "mid", "weak")}
    with FakeOpenAI(default=PairwiseJudge(accuracy=0.8, position_bias=0.1, seed=6)) as server:
        path = judge_file(tmp, "export.yaml", server.base_url)
        out = _pairwise(runs, path, *sides, "--json")
        assert out.returncode == 0, out.stderr
        for q, log in logs.items():
            done = run_cli("export", ids[q], "-o", str(log), "--store", runs["url"])
            assert done.returncode == 0, done.stderr
        first = run_cli("import-log", str(logs["weak"]), "--store", copy)
        assert first.returncode == 0, first.stderr
        for q in ("best", "mid"):
            assert run_cli("import-log", str(logs[q]), "--store", copy).returncode == 0
        asked = len(server.model_requests())
        # The copy answers the same comparison from what it holds: no call, same numbers.
        again = run_cli("pairwise", *sides, "--judge", str(path), "--store", copy, "--json")
        assert again.returncode == 0, again.stderr
        assert len(server.model_requests()) == asked
    before, after = json.loads(out.stdout), json.loads(again.stdout)
    assert after["new_calls"] == 0
    for key in ("pairs", "ratings", "position_bias"):
        assert after[key] == before[key], key

    lines = [json.loads(x) for x in logs["mid"].read_text().splitlines()]
    (across,) = [x for x in lines if x["type"] == "pairwise_across"]
    stored = rows(runs["db"], "pairwise_judgements")
    mine = [g for g in stored if ids["mid"] in (g["run_id"], g["run_b"])]
    assert len(across["judgements"]) == len(mine) and "trial_a" not in across["judgements"][0]
    assert not [x for x in lines if x["type"] == "pairwise"]  # none within the run
    waits = [x for x in first.stdout.splitlines() if "wait for run" in x]
    assert len(waits) == 2 and all("importing its log links them" in x for x in waits)
    # Other tests of this module may judge runs of their own in the shared store first.
    three = {ids[q] for q in ("best", "mid", "weak")}
    exported = [g for g in stored if g["run_id"] in three and g["run_b"] in three]
    assert len(rows(tmp / "copy.db", "pairwise_judgements")) == len(exported)
    for q, log in logs.items():
        twice = tmp / f"{q}.again.jsonl"
        assert run_cli("export", ids[q], "-o", str(twice), "--store", copy).returncode == 0
        assert twice.read_bytes() == log.read_bytes(), q


@pytest.mark.postgres
def test_a_postgres_store_made_before_judgements_across_runs_gains_run_b(
    postgres_url: str,
) -> None:
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.engine import make_url

    url = make_url(postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # a database of its own: the others share run ids
        conn.exec_driver_sql("DROP DATABASE IF EXISTS v12_pairwise")
        conn.exec_driver_sql("CREATE DATABASE v12_pairwise")
    admin.dispose()
    own = url.set(database="v12_pairwise").render_as_string(hide_password=False)
    store = Store(own)
    with store.engine.begin() as conn:  # back to schema 12: no run_b, its key or index
        conn.exec_driver_sql("ALTER TABLE pairwise_judgements DROP COLUMN run_b")
        conn.exec_driver_sql("DELETE FROM schema_version WHERE version > 12")
    store.close()
    store = Store(own)
    assert store.migrate() == SCHEMA_VERSION
    table = inspect(store.engine)
    assert "run_b" in {c["name"] for c in table.get_columns("pairwise_judgements")}
    assert "ix_pairwise_judgements_run_b" in {
        i["name"] for i in table.get_indexes("pairwise_judgements")
    }
    keys = table.get_foreign_keys("pairwise_judgements")
    assert any(k["constrained_columns"] == ["run_b"] for k in keys)
    store.close()
