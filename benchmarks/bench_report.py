"""Benchmark: the full report over a million trial rows, loading from SQLite included.

Builds (or reuses) a SQLite store holding one run: 10,000 tasks × 100 trials × 2 arms
(1,000,000 trial rows, one attempt row each plus ~0.5% extra crashed attempts), 200 clusters
of unequal size, 4 task classes, planted per-task success probabilities, some unknown costs,
confidences and harms. The store is created through ``harness.store.Store`` (so the schema is
the real one) and filled with ``sqlite3.executemany`` straight into its tables.

Then it times ``harness.report.load_report`` (store → report data, with a 10,000-resample
cluster bootstrap) in a fresh process per repeat, and prints wall time and peak RSS.

Run:  python benchmarks/bench_report.py            (first call builds /tmp/bench_report.db)
      python benchmarks/bench_report.py --rebuild  (force a new store)
Target: at most 10 s wall and 2 GiB peak RSS on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RUN_ID = "bench-report-run"


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (ru_maxrss is KiB on Linux, B on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def build_store(path: Path, tasks: int, trials: int, clusters: int, seed: int = 0) -> float:
    """Create the store at ``path`` and bulk-insert the synthetic run; returns seconds taken."""
    sys.path.insert(0, str(REPO))
    from harness.store import Store

    start = time.perf_counter()
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    store = Store(f"sqlite:///{path}")
    store.close()
    rng = np.random.default_rng(seed)
    arms = ["baseline", "candidate"]
    # Unequal cluster sizes (a few big repositories, many small), every cluster non-empty.
    cluster_of_task = np.concatenate(
        [np.arange(clusters), rng.zipf(1.6, tasks - clusters) % clusters]
    )
    rng.shuffle(cluster_of_task)
    cluster_effect = rng.normal(0.0, 0.8, clusters)
    task_logit = 0.6 + cluster_effect[cluster_of_task] + rng.normal(0.0, 1.5, tasks)
    p_task = {
        "baseline": 1.0 / (1.0 + np.exp(-task_logit)),
        "candidate": 1.0 / (1.0 + np.exp(-(task_logit + 0.15))),
    }
    classes = np.array(["lookup", "join", "aggregate", "write"])[rng.integers(0, 4, tasks)]
    task_ids = np.array([f"task-{i:05d}" for i in range(tasks)])
    cluster_names = np.array([f"repo-{c:03d}" for c in range(clusters)])[cluster_of_task]
    ts = "2026-01-01 00:00:00.000000"

    config = {
        "suite": {
            "name": "bench",
            "trials": trials,
            "denominator": "failure",
            "variants": False,
            "report": {
                "k": None,
                "cluster_key": "cluster",
                "primary": {"baseline": "baseline", "candidate": "candidate"},
                "confidence": 0.95,
            },
        }
    }
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=OFF")  # a throwaway bulk load: no journal, no fsync
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")  # 256 MiB page cache
    conn.execute(
        "INSERT INTO runs (id, suite_name, suite_path, description, config_hash, "
        "harness_version, config, overrides, seed, trials_per_task, arms, sandbox, image_ids, "
        "jobs_planned, status, host, pid, started_at, finished_at) "
        "VALUES (?, 'bench', 'bench.yaml', '', 'deadbeef', 'bench', ?, '{}', ?, ?, ?, 'local', "
        "?, ?, 'finished', 'bench', 0, ?, ?)",
        (
            RUN_ID,
            json.dumps(config),
            seed,
            trials,
            json.dumps(arms),
            json.dumps({"demo": "sha256:bench"}),
            tasks * trials * len(arms),
            ts,
            ts,
        ),
    )
    trial_sql = (
        "INSERT INTO trials (run_id, arm, task_id, variant, trial_index, seed, cluster, "
        "task_class, stratum, weight, status, passed, score, reason, evidence, confidence, "
        "tokens_in, tokens_cached, tokens_out, cost_usd, latency_s, steps, model_calls, "
        "image_id, attempts, harm_severity, grader_versions, started_at, finished_at) VALUES "
        "(?, ?, ?, '', ?, ?, ?, ?, NULL, 1.0, ?, ?, ?, '', '{}', ?, ?, ?, ?, ?, ?, ?, ?, "
        "'sha256:bench', ?, ?, '{\"answer_match\": \"1\"}', ?, ?)"
    )
    attempt_sql = (
        "INSERT INTO attempts (run_id, arm, task_id, variant, trial_index, attempt, outcome, "
        "started_at, finished_at) VALUES (?, ?, ?, '', ?, ?, ?, ?, ?)"
    )
    for arm in arms:
        for t0 in range(0, tasks, 1000):  # 1000 tasks x trials rows per batch
            idx = np.arange(t0, min(t0 + 1000, tasks))
            t = np.repeat(idx, trials)
            i = np.tile(np.arange(trials), idx.size)
            m = t.size
            u = rng.random(m)
            passed = u < p_task[arm][t]
            infra = rng.random(m) < 0.002
            grader = ~infra & (rng.random(m) < 0.001)
            status = np.where(
                infra,
                "infra_error",
                np.where(grader, "grader_error", np.where(passed, "passed", "failed")),
            )
            resolved = ~(infra | grader)
            tok_in = rng.integers(500, 20_000, m)
            tok_cached = tok_in // 3
            tok_out = rng.integers(50, 2_000, m)
            cost = (tok_in * 2.5 + tok_out * 10.0) / 1e6
            cost_unknown = ~resolved | (rng.random(m) < 0.01)
            conf = np.clip(p_task[arm][t] + rng.normal(0, 0.1, m), 0, 1)
            harm = np.where(rng.random(m) < 0.01, rng.integers(1, 4, m), 0).astype(float)
            latency = rng.lognormal(2.0, 0.6, m)
            steps = rng.integers(1, 40, m)
            rows = zip(
                [RUN_ID] * m,
                [arm] * m,
                task_ids[t].tolist(),
                i.tolist(),
                (t * 1000 + i).tolist(),
                cluster_names[t].tolist(),
                classes[t].tolist(),
                status.tolist(),
                [
                    bool(p) if r else None
                    for p, r in zip(passed.tolist(), resolved.tolist(), strict=True)
                ],
                [
                    float(p) if r else None
                    for p, r in zip(passed.tolist(), resolved.tolist(), strict=True)
                ],
                [c if r else None for c, r in zip(conf.tolist(), resolved.tolist(), strict=True)],
                tok_in.tolist(),
                tok_cached.tolist(),
                tok_out.tolist(),
                [
                    None if unk else c
                    for c, unk in zip(cost.tolist(), cost_unknown.tolist(), strict=True)
                ],
                np.where(resolved, latency, 0.0).tolist(),
                steps.tolist(),
                steps.tolist(),
                np.where(infra, 3, 1).tolist(),
                harm.tolist(),
                [ts] * m,
                [ts] * m,
                strict=True,
            )
            conn.executemany(trial_sql, rows)
            # One attempt row per attempt: 'ok' for the final one, infra_error before it.
            att = [
                (RUN_ID, arm, task_ids[a], b, 1, "ok", ts, ts)
                for a, b in zip(t.tolist(), i.tolist(), strict=True)
            ]
            crash = rng.random(m) < 0.005
            att += [
                (RUN_ID, arm, task_ids[a], b, 0, "infra_error", ts, ts)
                for a, b in zip(t[crash].tolist(), i[crash].tolist(), strict=True)
            ]
            conn.executemany(attempt_sql, att)
    conn.commit()
    conn.close()
    return time.perf_counter() - start


CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from harness.report import load_report
timings = {{}}
data = load_report({run!r}, {url!r}, timings=timings)
wall = time.perf_counter() - t0
cpu = time.process_time()
text = json.dumps(data)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": peak, "json_bytes": len(text),
                   "timings": timings}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", default="/tmp/bench_report.db")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=50, help="trials per task per arm")
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--no-primary",
        action="store_true",
        help="drop report.primary from the stored suite: time the report without the "
        "primary comparison (harness.release.compare)",
    )
    args = parser.parse_args()

    db = Path(args.db)
    if args.rebuild or not db.exists():
        secs = build_store(db, args.tasks, args.trials, args.clusters)
        print(f"built {db} ({args.tasks} tasks x {args.trials} trials x 2 arms) in {secs:.1f} s")
    with sqlite3.connect(db) as conn:
        n_rows = conn.execute("SELECT count(*) FROM trials").fetchone()[0]
        config = json.loads(conn.execute("SELECT config FROM runs").fetchone()[0])
        primary = None if args.no_primary else {"baseline": "baseline", "candidate": "candidate"}
        config["suite"]["report"]["primary"] = primary
        conn.execute("UPDATE runs SET config = ?", (json.dumps(config),))
    print(f"trial rows: {n_rows:,}; primary comparison: {'off' if args.no_primary else 'on'}")

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = CHILD.format(run=RUN_ID, url=f"sqlite:///{db}")
    walls, peaks = [], []
    for r in range(args.repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            sys.exit(out.stderr)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        walls.append(res["wall_s"])
        peaks.append(res["peak_rss_mib"])
        phases = ", ".join(f"{k} {v:.2f}s" for k, v in res["timings"].items())
        print(
            f"repeat {r + 1}: load_report {res['wall_s']:.2f} s wall, {res['cpu_s']:.2f} s CPU "
            "(imports included), "
            f"peak RSS {res['peak_rss_mib']:.0f} MiB, JSON {res['json_bytes'] / 1024:.0f} KiB"
            + (f"  [{phases}]" if phases else "")
        )
    print(
        f"best {min(walls):.2f} s, median {sorted(walls)[len(walls) // 2]:.2f} s wall; "
        f"peak RSS max {max(peaks):.0f} MiB (target: <= 10 s, <= 2048 MiB on 2 cores)"
    )


if __name__ == "__main__":
    main()
