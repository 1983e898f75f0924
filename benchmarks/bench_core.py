"""The harness's own cost per trial, without a sandbox, and `harness --help` start-up time.

    python benchmarks/bench_core.py [--trials 10000]

Runs a suite of answer-only tasks (no environment → no sandbox) with the simulated agent,
answer-match grading and one SQLite row per trial, through the real CLI in a subprocess,
and reports wall time per trial. Then times `harness --help` (median of 5 runs).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def make_suite(root: Path, trials: int) -> Path:
    n_tasks = 1000
    per_task = max(1, trials // (n_tasks * 2))
    tasks = [
        {
            "id": f"q{i}",
            "instruction": f"What is {i} squared?",
            "cluster": f"c{i % 50}",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": i * i}],
            "solution": {"answer": str(i * i)},
        }
        for i in range(n_tasks)
    ]
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    suite = {
        "name": "bench-core",
        "seed": 1,
        "trials": per_task,
        "tasks": ["tasks.yaml"],
        "arms": [
            {"name": "a", "agent": "simulated", "params": {"p": 0.6}},
            {"name": "b", "agent": "simulated", "params": {"p": 0.7}},
        ],
        "concurrency": 8,
        "sandbox": "local",
    }
    path = root / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = make_suite(root, args.trials)
        db = root / "bench.db"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness.cli",
                "run",
                str(suite),
                "-q",
                "--store",
                f"sqlite:///{db}",
            ],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
        import sqlite3

        n = sqlite3.connect(db).execute("SELECT count(*) FROM trials").fetchone()[0]
    helps = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "harness.cli", "--help"], capture_output=True)
        helps.append(time.perf_counter() - t0)
    print(f"trials stored:            {n}")
    print(f"wall time (whole CLI run): {wall:.1f} s  (start-up, plan, report included)")
    print(f"per trial:                {1000 * wall / n:.2f} ms   (target <= 5 ms)")
    print(f"`harness --help`:         {statistics.median(helps):.2f} s median of 5 (target < 1 s)")


if __name__ == "__main__":
    main()
