"""Costs of verdict integrity, side by side in one run.

    python benchmarks/bench_integrity.py [--trials 100] [--sandbox-trials 20]

1. Timeout stress: the same answer-only suite (``--trials`` trials, concurrency 10, an
   agent that works 1 s under a 2 s budget) run clean, then with about 10% of its trials
   blocking their event loop for 10x the budget (``time.sleep(20)``). The watchdog stops
   those at budget + grace; the ratio of wall times is the figure (the bar: <= 1.5x).
2. Per-trial sandbox cost of ``unsafe-local``, ``bwrap`` and ``docker`` (when a daemon
   answers): create, one command, the end-of-turn process sweep, destroy; the sweep's own
   share, and each backend's cost as a ratio to ``unsafe-local``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import yaml

REPO = Path(__file__).resolve().parents[1]


def _timeout_suite(root: Path, trials: int, block: bool) -> Path:
    tasks = [
        {
            "id": f"t{i}",
            "instruction": "What is 2 + 2?",
            "graders": [{"type": "answer_match", "mode": "exact", "expected": "4"}],
        }
        for i in range(trials)
    ]
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    suite = {
        "name": "bench-timeouts",
        "seed": 3,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "arms": [
            {
                "name": "a",
                "agent": "benchmarks.integrity_agents:Worker",
                "params": {"block": block, "work_s": 1.0},
            }
        ],
        "concurrency": 10,
        "budgets": {"timeout_s": 2},
    }
    path = root / f"suite-{block}.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _run(suite: Path, db: Path) -> float:
    t0 = time.perf_counter()
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(suite),
            "--store",
            f"sqlite:///{db}",
            "-q",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return wall


def timeout_stress(trials: int) -> None:
    import sqlite3

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clean = _run(_timeout_suite(root, trials, False), root / "clean.db")
        stress = _run(_timeout_suite(root, trials, True), root / "stress.db")
        with sqlite3.connect(root / "stress.db") as conn:
            timeouts = conn.execute(
                "SELECT COUNT(*) FROM trials WHERE reason LIKE '%timeout%'"
            ).fetchone()[0]
    print(f"timeout stress, {trials} trials, concurrency 10, budget 2 s, grace 2 s")
    print(f"  clean suite:                      {clean:6.1f} s")
    print(f"  {timeouts:3d} trials blocking 20 s each:    {stress:6.1f} s")
    print(f"  ratio stress / clean:             {stress / clean:6.2f}x (bar: <= 1.5x)")


async def _sandbox_costs(backend: str, n: int) -> tuple[float, float]:
    from harness.config.loader import load_suite
    from harness.config.models import Limits
    from harness.sandbox import get_provider
    from harness.sandbox.base import SandboxRequest

    resolved = load_suite(REPO / "tasks/shell/suite.yaml")
    env = resolved.environments["shell"]
    limits = Limits(memory="256m", pids=64)
    provider = get_provider(backend, limits=limits)
    ids = await provider.prepare([env])
    totals, sweeps = [], []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            sandbox = await provider.create(SandboxRequest(env, ids["shell"], limits=limits))
            await sandbox.exec("sleep 30 >/dev/null 2>&1 & true", timeout=30)
            t1 = time.perf_counter()
            await sandbox.sweep()
            sweeps.append(time.perf_counter() - t1)
            await sandbox.destroy()
            totals.append(time.perf_counter() - t0)
    finally:
        await provider.close()
    return statistics.median(totals), statistics.median(sweeps)


def sandbox_overhead(n: int) -> None:
    from harness.sandbox.bwrap import bwrap_available
    from harness.sandbox.docker import docker_available

    backends = ["unsafe-local"]
    backends += ["bwrap"] if bwrap_available() else []
    backends += ["docker"] if docker_available() else []
    costs = {b: anyio.run(_sandbox_costs, b, n) for b in backends}
    base = costs["unsafe-local"][0]
    print(f"per-trial sandbox cost, median of {n} (create, 1 command, sweep, destroy)")
    for b, (total, sweep) in costs.items():
        print(
            f"  {b:13s} {total * 1000:8.1f} ms  sweep {sweep * 1000:7.1f} ms "
            f"({sweep / total:5.1%} of it)  ratio to unsafe-local {total / base:5.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--sandbox-trials", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    timeout_stress(args.trials)
    sandbox_overhead(args.sandbox_trials)


if __name__ == "__main__":
    main()
