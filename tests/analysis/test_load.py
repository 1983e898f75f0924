"""The one loader packs per-trial columns in SQL (one text per group of trials) and unpacks
them with numpy: every trial's numbers and labels must land on that trial, NULLs and variant
trials included, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import uuid

import numpy as np
import pytest

from harness.analysis.load import OPTIONAL, load_run_table
from harness.store import Store
from harness.store.queries import STATUS_CODES
from tests.report.report_support import make_store, trial


def _rows() -> list[dict]:
    rng = np.random.default_rng(5)
    statuses = ["passed", "failed", "infra_error", "grader_error", "harness_error", "weird"]
    rows = []
    for arm in ("base", "cand"):
        for t in range(7):
            for i in range(int(rng.integers(1, 6))):
                rows.append(
                    trial(
                        arm,
                        f"task-{t}",
                        i,
                        statuses[int(rng.integers(len(statuses)))],
                        seed=int(rng.integers(2**62)),
                        confidence=None if rng.random() < 0.5 else float(rng.random()),
                        cost_usd=None if rng.random() < 0.3 else float(rng.random() / 7),
                        latency_s=float(rng.exponential(30)),
                        steps=int(rng.integers(0, 40)),
                        harm_severity=float(rng.choice([0.0, 1.0, 2.5])),
                        cluster=f"c{t % 3}",
                        task_class=["x", "y"][t % 2],
                        variant="" if rng.random() < 0.7 else "reworded",
                        tokens_in=int(rng.integers(0, 10**6)),
                        attempts=int(rng.integers(1, 4)),
                    )
                )
    return rows


def _check(store: Store, rows: list[dict]) -> None:
    table = load_run_table(store, "run-1", OPTIONAL)
    t = table.trials
    assert len(t) == len(rows)
    got = {
        (t.arm.values()[j], t.task.values()[j], t.variant.values()[j], int(t.trial_index[j])): j
        for j in range(len(t))
    }
    assert len(got) == len(rows)
    for r in rows:
        j = got[(r["arm"], r["task_id"], r["variant"], r["trial_index"])]
        code = STATUS_CODES.get(r["status"], STATUS_CODES["harness_error"])
        assert t.status[j] == code
        assert t.seed[j] == r["seed"]  # 63-bit: exact, never through a float
        assert t.steps[j] == r["steps"] and t.attempts[j] == r["attempts"]
        assert t.tokens_in[j] == r["tokens_in"]
        assert t.cluster.values()[j] == r["cluster"]
        assert t.task_class.values()[j] == r["task_class"]
        assert t.latency[j] == pytest.approx(r["latency_s"], abs=1e-6)
        assert t.harm[j] == pytest.approx(r["harm_severity"], abs=1e-6)
        if r["confidence"] is None:
            assert np.isnan(t.confidence[j])
        else:
            assert t.confidence[j] == pytest.approx(r["confidence"], abs=1e-6)
        if r["cost_usd"] is None:
            assert np.isnan(t.cost[j])
        else:
            assert t.cost[j] == pytest.approx(r["cost_usd"], abs=1e-12)
    # a field nobody asked for is absent, and reading it is an error, not a silent default
    bare = load_run_table(store, "run-1").trials
    assert not bare.has("cost")
    with pytest.raises(LookupError, match="loaded without 'cost'"):
        bare.cost  # noqa: B018


def test_packed_columns_stay_aligned_on_sqlite(tmp_path):
    rows = _rows()
    store = make_store(f"sqlite:///{tmp_path / 'r.db'}", rows)
    _check(store, rows)
    with sqlite3.connect(tmp_path / "r.db") as conn:  # the fixture really has NULLs
        assert conn.execute("SELECT count(*) FROM trials WHERE confidence IS NULL").fetchone()[0]


def test_packed_columns_stay_aligned_on_postgres(postgres_url):
    from sqlalchemy import create_engine, text

    db = f"load_{uuid.uuid4().hex[:8]}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {db}"))
    try:
        rows = _rows()
        store = make_store(postgres_url.rsplit("/", 1)[0] + f"/{db}", rows)
        _check(store, rows)
        store.close()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        admin.dispose()


def test_the_docs_example_runs_on_a_real_store(tmp_path, monkeypatch, capsys):
    """docs/report.md's Python example, as written, on a store of three arms."""
    from tests.conftest import REPO
    from tests.fixtures.sample_store import build_sample_store

    page = (REPO / "docs" / "report.md").read_text()
    section = page.split("## A run's trials in Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / ".harness").mkdir()
    build_sample_store(tmp_path / ".harness" / "harness.db", tasks=12, trials=2)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/report.md", "exec"), {})
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("24 0.") and "shop/task-00000" in first
    assert "'estimate'" in second and "'n_clusters'" in second
