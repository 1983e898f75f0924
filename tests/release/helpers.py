"""Trial rows built in memory (seeded) and small stores, for the release tests."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from harness.analysis.table import Trials


def row(arm, task, passed, *, index=0, cls="default", cluster=None, status=None, **extra):
    status = status or ("passed" if passed else "failed")
    return {
        "arm": arm,
        "task_id": task,
        "variant": "",
        "trial_index": index,
        "seed": hash((task, index)) & 0xFFFF,
        "cluster": cluster or task,
        "task_class": cls,
        "weight": 1.0,
        "status": status,
        "passed": status == "passed",
        "cost_usd": 0.01,
        "grader_versions": {"answer_match": "1"},
        "image_id": None,
        **extra,
    }


def table(rows: list[dict]) -> Trials:
    """Row dicts as the trials table the release code reads (the columns the rows carry;
    a row without ``attempts`` took one)."""
    keys = [k for k in dict.fromkeys(k for r in rows for k in r) if k != "passed"]
    cols = {k: [r.get(k) for r in rows] for k in keys} or {"task_id": [], "status": []}
    if "attempts" in cols:
        cols["attempts"] = [1 if a is None else a for a in cols["attempts"]]
    return Trials.from_columns(cols)


def seed001(branch: str) -> list[dict]:
    """The eval-harness guide's two branches on 50 cases: A = 5 fixed / 0 broke, B = 8 fixed / 3 broke."""
    if branch == "A":
        pairs = [(1, 1)] * 42 + [(0, 1)] * 5 + [(0, 0)] * 3
    else:
        pairs = [(1, 1)] * 39 + [(1, 0)] * 3 + [(0, 1)] * 8
    out = []
    for i, (a, b) in enumerate(pairs):
        out += [row("base", f"t{i:02d}", a), row("cand", f"t{i:02d}", b)]
    return out


def simulate(
    rng: np.random.Generator,
    n_tasks: int = 200,
    shift: float = 0.0,
    trials: int = 1,
    arms=("base", "cand"),
    n_classes: int = 1,
) -> list[dict]:
    """Independent trials with per-task probabilities from Beta(3, 2); the candidate's are
    shifted by ``shift`` (clipped). Arms draw independently (no common random numbers)."""
    p = rng.beta(3.0, 2.0, n_tasks)
    probs = {arms[0]: p, arms[1]: np.clip(p + shift, 0, 1)}
    for extra in arms[2:]:
        probs[extra] = p
    rows = []
    for arm, pa in probs.items():
        ys = rng.random((n_tasks, trials)) < pa[:, None]
        for j in range(n_tasks):
            for k in range(trials):
                rows.append(row(arm, f"t{j:03d}", bool(ys[j, k]), index=k, cls=f"k{j % n_classes}"))
    return rows


def make_run(store, run_id, rows, *, arms, suite=None, tasks=None, started=None, **fields):
    """Create a run and write its rows straight into a store."""
    from harness.store import Run

    now = started or datetime.now(UTC)
    store.create_run(
        Run(
            id=run_id,
            suite_name=fields.pop("suite_name", "s"),
            suite_path="suite.yaml",
            config_hash=fields.pop("config_hash", "abc123"),
            harness_version="test",
            config={"suite": suite or {"name": "s"}, "tasks": tasks or {}, "environments": {}},
            seed=fields.pop("seed", 1),
            trials_per_task=fields.pop("trials_per_task", 1),
            arms=arms,
            sandbox="local",
            started_at=now,
            **fields,
        )
    )
    for r in rows:
        store.write_trial({**r, "run_id": run_id, "started_at": now, "finished_at": now})
