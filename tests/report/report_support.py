"""Build small stores with known trial rows for the report tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert

from harness.store import Attempt, Run, Store, Trial

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def trial(arm: str, task: str, index: int, status: str, **fields: Any) -> dict[str, Any]:
    """One trial-row dict with defaults for every NOT NULL column."""
    row: dict[str, Any] = {
        "run_id": "run-1",
        "arm": arm,
        "task_id": task,
        "variant": "",
        "trial_index": index,
        "seed": 1000 + index,
        "cluster": task,
        "task_class": "default",
        "stratum": None,
        "weight": 1.0,
        "status": status,
        "passed": {"passed": True, "failed": False}.get(status),
        "confidence": None,
        "tokens_in": 100,
        "tokens_cached": 10,
        "tokens_out": 20,
        "cost_usd": 0.01,
        "latency_s": 1.0 + index,
        "steps": 3,
        "model_calls": 1,
        "image_id": "sha256:img",
        "attempts": 1,
        "harm_severity": 0.0,
        "grader_versions": {"answer_match": "1"},
        "evidence": {},
        "reason": "",
        "started_at": T0,
        "finished_at": T0,
    }
    row.update(fields)
    return row


def make_store(
    url: str,
    rows: list[dict[str, Any]],
    *,
    arms: list[str] | None = None,
    trials: int = 1,
    suite: dict[str, Any] | None = None,
    tasks: dict[str, Any] | None = None,
    crashed_attempts: dict[str, int] | None = None,
    seed: int = 7,
) -> Store:
    """A store holding run 'run-1' with ``rows``; one attempt per row ('ok', or
    'infra_error' for a crashed trial), plus ``crashed_attempts[arm]`` extra infra_error
    attempts."""
    store = Store(url)
    arms = arms or sorted({r["arm"] for r in rows})
    config: dict[str, Any] = {"suite": {"name": "t", "trials": trials, **(suite or {})}}
    if tasks is not None:
        config["tasks"] = tasks
    store.create_run(
        Run(
            id="run-1",
            suite_name="t",
            suite_path="t.yaml",
            config_hash="abc123",
            harness_version="0.test",
            config=config,
            seed=seed,
            trials_per_task=trials,
            arms=arms,
            sandbox="local",
            image_ids={"env": "sha256:img"},
            jobs_planned=len({(r["arm"], r["task_id"]) for r in rows}) * trials,
            status="finished",
            started_at=T0,
        )
    )
    attempts = [
        {
            "run_id": "run-1",
            "arm": r["arm"],
            "task_id": r["task_id"],
            "variant": r["variant"],
            "trial_index": r["trial_index"],
            "attempt": 1,
            "outcome": "ok" if r["status"] != "infra_error" else "infra_error",
            "started_at": T0,
            "finished_at": T0,
        }
        for r in rows
    ]
    for arm, n in (crashed_attempts or {}).items():
        attempts += [
            {
                "run_id": "run-1",
                "arm": arm,
                "task_id": "x",
                "variant": "",
                "trial_index": i,
                "attempt": 0,
                "outcome": "infra_error",
                "started_at": T0,
                "finished_at": T0,
            }
            for i in range(n)
        ]
    # One transaction for all rows (write_trial commits per trial, which is slow in bulk).
    with store.engine.begin() as conn:
        if rows:
            conn.execute(insert(Trial.__table__), rows)
        if attempts:
            conn.execute(insert(Attempt.__table__), attempts)
    return store


def grid_rows(
    arm: str,
    outcomes: dict[str, list[int]],
    clusters: dict[str, str] | None = None,
    classes: dict[str, str] | None = None,
    **fields: Any,
) -> list[dict[str, Any]]:
    """Rows for ``outcomes[task] = [1, 0, ...]`` (one entry per trial)."""
    rows = []
    for task, ys in outcomes.items():
        for i, y in enumerate(ys):
            rows.append(
                trial(
                    arm,
                    task,
                    i,
                    "passed" if y else "failed",
                    cluster=(clusters or {}).get(task, task),
                    task_class=(classes or {}).get(task, "default"),
                    **fields,
                )
            )
    return rows
