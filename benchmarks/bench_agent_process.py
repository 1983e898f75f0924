"""Per-trial cost of running a ``module:Class`` agent in a child process, side by side in
one run against the same do-nothing work in-process.

    python benchmarks/bench_agent_process.py [--tasks 40] [--concurrency 4]

One `harness run` of an answer-only suite (no sandbox) with two interleaved arms: ``noop``
(built in, in the trial's event loop) and ``benchmarks.agent_process_agents:Answer`` (the
same do-nothing agent as a ``module:Class``, so in a child process). Each trial's latency
(agent turn and grading, from the store) is compared: the medians' ratio and difference
are the child's per-trial overhead; the run's wall time is printed too.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tasks = [
            {
                "id": f"t{i}",
                "instruction": "Say nothing.",
                "graders": [{"type": "answer_match", "mode": "exact", "expected": "x"}],
            }
            for i in range(args.tasks)
        ]
        (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
        suite = {
            "name": "bench-agent-process",
            "seed": 5,
            "trials": 1,
            "tasks": ["tasks.yaml"],
            "arms": [
                {"name": "in-process", "agent": "noop"},
                {"name": "child", "agent": "benchmarks.agent_process_agents:Answer"},
            ],
            "concurrency": args.concurrency,
        }
        (root / "suite.yaml").write_text(yaml.safe_dump(suite))
        db = root / "b.db"
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", str(root / "suite.yaml")]
            + ["--store", f"sqlite:///{db}", "-q"],
            cwd=REPO,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        if done.returncode not in (0, 1):
            raise SystemExit(done.stderr[-2000:])
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT arm, latency_s FROM trials").fetchall()
    by_arm: dict[str, list[float]] = {}
    for arm, latency in rows:
        by_arm.setdefault(arm, []).append(latency)
    inproc = statistics.median(by_arm["in-process"])
    child = statistics.median(by_arm["child"])
    print(
        f"{args.tasks} tasks x 2 arms, concurrency {args.concurrency}, one run: {wall:.1f} s wall"
    )
    print(f"  median trial latency, in-process noop:   {inproc * 1000:8.1f} ms")
    print(f"  median trial latency, child process:      {child * 1000:8.1f} ms")
    print(
        f"  overhead per trial: +{(child - inproc) * 1000:.0f} ms, ratio {child / max(inproc, 1e-6):.1f}x"
    )


if __name__ == "__main__":
    main()
