"""The loader packs per-trial columns in SQL (one text per task) and unpacks them with numpy:
every trial's numbers must land on that trial, NULLs included, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import uuid

import numpy as np
import pytest

from harness.report.load import STATUS_CODES, load_run_data
from harness.store import Store
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
                    )
                )
    return rows


def _check(store: Store, rows: list[dict]) -> None:
    data = load_run_data(store, "run-1")
    for arm_name, arm in data.arms.items():
        got = {
            (arm.tasks[arm.task_index[j]], int(arm.trial_index[j])): j for j in range(arm.n_trials)
        }
        mine = [r for r in rows if r["arm"] == arm_name]
        assert len(got) == len(mine) == arm.n_trials
        for r in mine:
            j = got[(r["task_id"], r["trial_index"])]
            code = STATUS_CODES.get(r["status"], STATUS_CODES["harness_error"])
            assert arm.status[j] == code
            assert arm.seed[j] == r["seed"]  # 63-bit: exact, never through a float
            assert arm.steps[j] == r["steps"]
            assert arm.latency[j] == pytest.approx(r["latency_s"], abs=1e-6)
            assert arm.harm[j] == pytest.approx(r["harm_severity"], abs=1e-6)
            if r["confidence"] is None:
                assert np.isnan(arm.confidence[j])
            else:
                assert arm.confidence[j] == pytest.approx(r["confidence"], abs=1e-6)
            if r["cost_usd"] is None:
                assert np.isnan(arm.cost[j])
            else:
                assert arm.cost[j] == pytest.approx(r["cost_usd"], abs=1e-12)


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
