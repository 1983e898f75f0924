"""Store rows → report data (pure). Renderers (terminal, JSON, Markdown) only format this.

Per-task aggregation comes first: a task's trials are counted per task before any interval
over tasks is formed, so repeated trials never shrink an interval as if they were new tasks.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from harness import errors
from harness.stats.intervals import wilson_interval
from harness.stats.passk import pass_at_k, pass_hat_k

ESTIMAND = (
    "expected success rate of the arm on a task drawn uniformly from the suite's tasks, "
    "one trial per task (mean of per-task success rates)"
)


def arm_summary(
    rows: list[dict[str, Any]],
    *,
    trials_per_task: int,
    scheduled: int,
    denominator: str = "failure",
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Summarise one arm's trial rows (dicts with task_id, cluster, status, passed, ...)."""
    by_status: dict[str, int] = defaultdict(int)
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # task -> [n, c]
    clusters: set[str] = set()
    for r in rows:
        by_status[r["status"]] += 1
        clusters.add(r["cluster"])
        resolved = r["status"] in errors.RESOLVED
        if not resolved and denominator == "exclude":
            per_task.setdefault(r["task_id"], [0, 0])
            continue
        counts = per_task[r["task_id"]]
        counts[0] += 1
        counts[1] += int(bool(r["passed"]) and resolved)
    tasks = [t for t, (n, _) in per_task.items() if n > 0]
    n_arr = np.array([per_task[t][0] for t in tasks], dtype=float)
    c_arr = np.array([per_task[t][1] for t in tasks], dtype=float)
    n_tasks = len(tasks)
    completed = sum(by_status.values())
    unresolved = completed - by_status[errors.PASSED] - by_status[errors.FAILED]
    out: dict[str, Any] = {
        "tasks": len(per_task),
        "clusters": len(clusters),
        "trials_scheduled": scheduled,
        "trials_completed": completed,
        "trials_unresolved": unresolved,
        "trials_missing": max(0, scheduled - completed),
        "by_status": dict(by_status),
        "denominator": denominator,
    }
    if n_tasks == 0:
        out["success"] = None
        out["pass_hat_k"] = out["pass_at_k"] = []
        return out
    rates = c_arr / n_arr
    mean = float(rates.mean())
    lo, hi = wilson_interval(mean * n_tasks, n_tasks, confidence)
    out["success"] = {
        "estimate": mean,
        "n": n_tasks,
        "unit": "task",
        "lo": float(lo),
        "hi": float(hi),
        "confidence": confidence,
        "method": "Wilson score interval over tasks (mean of per-task rates)",
    }
    out["pass_hat_k"], out["pass_at_k"] = [], []
    for k in range(1, trials_per_task + 1):
        ok = n_arr >= k
        if not ok.any():
            continue
        for key, fn in (("pass_hat_k", pass_hat_k), ("pass_at_k", pass_at_k)):
            values = np.asarray(fn(n_arr[ok].astype(int), c_arr[ok].astype(int), k), dtype=float)
            out[key].append({"k": k, "estimate": float(values.mean()), "n": int(ok.sum())})
    out["unstable_tasks"] = int(((c_arr > 0) & (c_arr < n_arr)).sum())
    return out


def run_report(
    run, trial_rows: list[dict[str, Any]], denominator: str = "failure", confidence: float = 0.95
) -> dict[str, Any]:
    """The whole first-cut report for one run."""
    arms: dict[str, list[dict[str, Any]]] = {a: [] for a in run.arms}
    for r in trial_rows:
        arms.setdefault(r["arm"], []).append(r)
    per_arm_planned = run.jobs_planned // max(1, len(run.arms))
    return {
        "run": {
            "id": run.id,
            "suite": run.suite_name,
            "status": run.status,
            "started_at": run.started_at.isoformat() if run.started_at else None,
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            "harness_version": run.harness_version,
            "config_hash": run.config_hash,
            "sandbox": run.sandbox,
            "seed": run.seed,
            "trials_per_task": run.trials_per_task,
            "image_ids": run.image_ids,
        },
        "estimand": ESTIMAND,
        "sampling_unit": "task",
        "arms": {
            name: arm_summary(
                rows,
                trials_per_task=run.trials_per_task,
                scheduled=per_arm_planned,
                denominator=denominator,
                confidence=confidence,
            )
            for name, rows in arms.items()
        },
    }
