"""A synthetic run written straight into a store: for the viewer's tests, benchmark and
screenshots, where running real trials would take minutes.

    run_id = build_sample_store("/tmp/sample.db", tasks=40, trials=5)

Three arms (``baseline``, ``candidate`` and ``baseline-aa``, an A/A copy of the baseline),
task classes and clusters of unequal size, planted per-task success probabilities, token
counts and prices, stated confidences, a few infrastructure and grader errors (with retried
attempts), and, for the failed trials of the first ``detailed_tasks`` tasks, grader evidence
(state diff and trajectory rules) with trajectory events and one blob. The suite declares a
non-inferiority gate, so the release verdict has something to read.

The schema comes from ``harness.store.Store``; rows go in with ``sqlite3.executemany``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sqlite3
from pathlib import Path

ARMS = ("baseline", "candidate", "baseline-aa")
CLASSES = ("lookup", "cancel", "refund", "exchange", "policy")
TS = "2026-01-01 00:00:00.000000"


def build_sample_store(
    path: str | Path,
    *,
    tasks: int = 40,
    trials: int = 5,
    seed: int = 0,
    run_id: str = "sample-run",
    detailed_tasks: int = 40,
    gate: bool = True,
) -> str:
    """Create (or replace) a SQLite store at ``path`` holding one synthetic run; returns its id."""
    from harness.store import Store

    path = Path(path)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    Store(f"sqlite:///{path}").close()
    rng = random.Random(seed)

    n_clusters = max(2, tasks // 4)
    task_ids = [f"shop/task-{i:05d}" for i in range(tasks)]
    # Unequal cluster sizes, mildly skewed (a few customers with many tasks).
    cluster = [f"customer-{int(n_clusters * rng.random() ** 1.4):03d}" for _ in range(tasks)]
    cls = [CLASSES[i % len(CLASSES)] for i in range(tasks)]
    logit = [0.8 + rng.gauss(0, 1.6) for _ in range(tasks)]
    shift = {"baseline": 0.0, "baseline-aa": 0.0, "candidate": 0.25}
    class_shift = {"refund": -0.6, "lookup": 0.5}  # the candidate gets worse at refunds
    price = {"baseline": (2.5, 10.0), "baseline-aa": (2.5, 10.0), "candidate": (0.8, 3.2)}

    arm_specs = [
        {
            "name": a,
            "agent": "llm",
            "params": {"temperature": 0.0},
            "model": {"name": "big-model-2026-01" if a != "candidate" else "small-model-2026-03"},
        }
        for a in ARMS
    ]
    suite = {
        "name": "sample",
        "description": "Synthetic run for the viewer: three arms, planted effects.",
        "trials": trials,
        "denominator": "failure",
        "arms": arm_specs,
        "report": {
            "k": None,
            "cluster_key": "cluster",
            "primary": {"baseline": "baseline", "candidate": "candidate"},
            "confidence": 0.95,
        },
    }
    if gate:
        suite["gate"] = {
            "rule": "non-inferiority",
            "margin": 0.05,
            "sides": "one-sided",
            "confidence": 0.95,
            "max_unresolved": 0.05,
            "n_resamples": 1000,
        }
    task_cfg = {
        t: {
            "id": t,
            "instruction": f"Customer {cluster[i]} asks for help with order W{1000 + i} ({cls[i]}).",
            "class": cls[i],
            "cluster": cluster[i],
        }
        for i, t in enumerate(task_ids)
    }
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute(
        "INSERT INTO runs (id, suite_name, suite_path, description, config_hash, "
        "harness_version, config, overrides, seed, trials_per_task, arms, sandbox, image_ids, "
        "jobs_planned, status, host, pid, started_at, finished_at) VALUES "
        "(?, 'sample', 'sample.yaml', '', ?, ?, ?, '{}', ?, ?, ?, 'docker', ?, ?, 'finished', "
        "'sample-host', 0, ?, ?)",
        (
            run_id,
            hashlib.sha256(json.dumps(suite, sort_keys=True).encode()).hexdigest(),
            _version(),
            json.dumps({"suite": suite, "tasks": task_cfg, "environments": {}}),
            seed,
            trials,
            json.dumps(list(ARMS)),
            json.dumps({"shop": "sha256:5f1e0c7a9b3d"}),
            tasks * trials * len(ARMS),
            TS,
            TS,
        ),
    )
    trial_rows, attempt_rows, event_rows = [], [], []
    blobs: dict[str, bytes] = {}
    trial_id = 0
    for arm in ARMS:
        p_in, p_out = price[arm]
        for i, t in enumerate(task_ids):
            lg = (
                logit[i]
                + shift[arm]
                + (class_shift.get(cls[i], 0.0) if arm == "candidate" else 0.0)
            )
            p = 1.0 / (1.0 + math.exp(-lg))
            for k in range(trials):
                trial_id += 1
                u = rng.random()
                status = "passed" if u < p else "failed"
                error = None
                if rng.random() < 0.004:
                    status, error = "infra_error", rng.choice(_INFRA_ERRORS)
                elif rng.random() < 0.002:
                    status, error = "grader_error", "GraderError: state dump returned invalid JSON"
                resolved = status in ("passed", "failed")
                tok_in = rng.randint(2_000, 30_000)
                tok_out = rng.randint(100, 3_000)
                cost = (tok_in * p_in + tok_out * p_out) / 1e6
                conf = min(1.0, max(0.0, p + rng.gauss(0.05, 0.15))) if resolved else None
                steps = rng.randint(3, 25)
                evidence, reason, harm = {}, "", 0.0
                if status == "failed" and i < detailed_tasks:
                    evidence, reason, harm = _evidence(rng, i, steps)
                    event_rows += _events(trial_id, rng, i, steps, evidence, blobs)
                attempts = 1
                if status == "infra_error":
                    attempts = 3
                    for a in range(3):
                        attempt_rows.append((run_id, arm, t, k, a, "infra_error", error))
                else:
                    attempt_rows.append((run_id, arm, t, k, 0, "ok", None))
                trial_rows.append(
                    (
                        trial_id,
                        run_id,
                        arm,
                        t,
                        k,
                        (i * 1_000 + k) * 7919,
                        cluster[i],
                        cls[i],
                        status,
                        (status == "passed") if resolved else None,
                        (1.0 if status == "passed" else 0.0) if resolved else None,
                        reason,
                        json.dumps(evidence),
                        conf,
                        tok_in,
                        tok_in // 3,
                        tok_out,
                        cost if resolved else None,
                        rng.lognormvariate(3.0, 0.5) if resolved else 0.0,
                        steps,
                        steps,
                        "sha256:5f1e0c7a9b3d",
                        attempts,
                        harm,
                        json.dumps({"state_diff": "1", "policy_path": "1"}),
                        error,
                    )
                )
    conn.executemany(
        "INSERT INTO trials (id, run_id, arm, task_id, variant, trial_index, seed, cluster, "
        "task_class, stratum, weight, status, passed, score, reason, evidence, answer, "
        "confidence, tokens_in, tokens_cached, tokens_out, cost_usd, latency_s, steps, "
        "model_calls, image_id, attempts, harm_severity, grader_versions, error, started_at, "
        f"finished_at) VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, NULL, 1.0, ?, ?, ?, ?, ?, NULL, ?, "
        f"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{TS}', '{TS}')",
        trial_rows,
    )
    conn.executemany(
        "INSERT INTO attempts (run_id, arm, task_id, variant, trial_index, attempt, outcome, "
        f"error, started_at, finished_at) VALUES (?, ?, ?, '', ?, ?, ?, ?, '{TS}', '{TS}')",
        attempt_rows,
    )
    conn.executemany(
        "INSERT INTO trajectory_events (trial_id, step, kind, tool, args, content, ok, blob_ref, "
        "tokens_in, tokens_out, tokens_cached, cost_usd, latency_s, ts) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, NULL, 0.1, 0)",
        event_rows,
    )
    conn.executemany("INSERT INTO blobs (sha256, data) VALUES (?, ?)", list(blobs.items()))
    conn.commit()
    conn.close()
    return run_id


_INFRA_ERRORS = [
    "SandboxError: container exited with code 137 (out of memory)",
    "ModelUnavailable: 503 from the model API after 5 retries",
    "SandboxError: docker daemon did not answer within 30 s",
]


def _version() -> str:
    from harness import __version__

    return __version__


def _evidence(rng: random.Random, i: int, steps: int) -> tuple[dict, str, float]:
    order = f"W{1000 + i}"
    kind = rng.choice(("wrong", "missing", "side"))
    diff = {"mode": "full", "missing_changes": [], "wrong_values": [], "side_effects": []}
    if kind == "wrong":
        diff["wrong_values"].append(
            {"path": f"orders.{order}.refunded", "expected": 54.04, "actual": 45.0, "before": 0.0}
        )
        reason = f"wrong value at orders.{order}.refunded: expected 54.04, got 45.0 (was 0.0)"
    elif kind == "missing":
        diff["missing_changes"].append(
            {"path": f"orders.{order}.status", "expected": "cancelled", "actual": "pending"}
        )
        reason = f"missing change at orders.{order}.status: expected 'cancelled', still 'pending'"
    else:
        diff["side_effects"].append(
            {"path": "orders.W9001.status", "before": "pending", "after": "cancelled"}
        )
        reason = "unexpected change at orders.W9001.status: 'pending' -> 'cancelled'"
    forbidden_step = min(steps - 1, 2)
    path_details = {
        "required": [
            {"label": "verify", "action": "verify_identity(...)", "step": 1},
            {"label": "refund", "action": f"refund(order_id='{order}')", "step": None},
        ],
        "order": [{"before": "verify", "after": "refund", "holds": True, "steps": [1, None]}],
        "forbidden": [
            {
                "action": "cancel_other_order",
                "step": forbidden_step,
                "severity": "high",
                "tool": "cancel_order",
                "args": {"order_id": "W9001"},
                "ok": True,
            }
        ],
        "progress": 0.5,
    }
    graders = [
        {
            "grader": "state_diff",
            "version": "1",
            "role": "outcome",
            "passed": False,
            "score": 0.0,
            "reasons": [reason],
            "details": diff,
            "harms": [],
        },
        {
            "grader": "policy_path",
            "version": "1",
            "role": "path",
            "passed": False,
            "score": 0.5,
            "reasons": [
                f"required action 'refund' (refund(order_id='{order}')) never reached",
                f"forbidden action 'cancel_other_order' at step {forbidden_step}, severity high",
            ],
            "details": path_details,
            "harms": path_details["forbidden"],
        },
    ]
    return (
        {"graders": graders, "failure": None, "info": {}, "harms": path_details["forbidden"]},
        reason,
        3.0,
    )


def _events(
    trial_id: int, rng: random.Random, i: int, steps: int, evidence: dict, blobs: dict[str, bytes]
) -> list[tuple]:
    order = f"W{1000 + i}"
    forbidden = {h["step"] for h in evidence.get("harms", [])}
    out = [
        (trial_id, 0, "user", None, None, f"Please cancel order {order} and refund it.", True, None)
    ]
    for s in range(1, min(steps, 6)):
        if s in forbidden:
            tool, args = "cancel_order", {"order_id": "W9001"}
            content = '{"order_id": "W9001", "status": "cancelled"}'
        elif s == 1:
            tool, args = "verify_identity", {"user_id": f"user_{i}"}
            content = '{"verified": true}'
        else:
            tool, args = "get_order", {"order_id": order}
            content = json.dumps({"order_id": order, "status": "pending", "total": 54.04})
        ref = None
        if s == 3:  # one long result kept in full in the blobs table
            full = json.dumps({"orders": [{"id": f"W{j}", "total": j / 7} for j in range(600)]})
            data = full.encode()
            ref = hashlib.sha256(data).hexdigest()
            blobs[ref] = data
            content = full[:400] + f"\n…[truncated, {len(data)} bytes in blob {ref[:12]}]"
        out.append((trial_id, s, "tool_call", tool, json.dumps(args), content, True, ref))
    out.append(
        (trial_id, min(steps, 6), "message", None, None, f"Order {order} is cancelled.", True, None)
    )
    return out
