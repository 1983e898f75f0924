"""Per-trial cost of running a ``module:Class`` agent in a process of its own (in the agent
jail), side by side in one run against the same do-nothing work in-process.

    python benchmarks/bench_agent_process.py [--tasks 40] [--concurrency 4] [--repo PATH]

1. One `harness run` of an answer-only suite (no sandbox) with two interleaved arms:
   ``noop`` (built in, in the trial's event loop) and
   ``benchmarks.agent_process_agents:Answer`` (the same do-nothing agent as a
   ``module:Class``, so in a process of its own). Each trial's latency (agent turn and
   grading, from the store) is compared: the medians' ratio and difference are the
   child's per-trial overhead in wall time.
2. The CPU it costs: the same suite with only the in-process arm, then with only the child
   arm, back to back; the CPU time (user + system) of each whole run (the harness and every
   process under it, the jail included) is measured, and the difference divided by the
   number of trials is the child's CPU per trial (the jail's start-up, once per run, is in
   it too, so more tasks give a smaller figure).

``--repo`` runs another checkout's harness (say, an older commit's worktree) with this
script, to compare commits.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CHILD = {"name": "child", "agent": "benchmarks.agent_process_agents:Answer"}
INPROC = {"name": "in-process", "agent": "noop"}


def _run(root: Path, repo: Path, arms: list[dict], tasks: int, concurrency: int, name: str):
    """One ``harness run``: (wall seconds, CPU seconds of the whole process tree, rows)."""
    suite = {
        "name": f"bench-agent-process-{name}",
        "seed": 5,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "arms": arms,
        "concurrency": concurrency,
    }
    (root / f"{name}.yaml").write_text(yaml.safe_dump(suite))
    db = root / f"{name}.db"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(root / f"{name}.yaml")]
        + ["--store", f"sqlite:///{db}", "-q"],
        cwd=repo,
        env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT arm, latency_s FROM trials").fetchall()
    assert len(rows) == tasks * len(arms), (len(rows), done.stderr[-2000:])
    return wall, cpu, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repo", type=Path, default=REPO, help="the checkout whose harness runs")
    args = ap.parse_args()
    repo = args.repo.resolve()
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
        n, c = args.tasks, args.concurrency
        wall, _cpu, rows = _run(root, repo, [INPROC, CHILD], n, c, "both")
        wall_in, cpu_in, _ = _run(root, repo, [INPROC], n, c, "in-process")
        wall_child, cpu_child, _ = _run(root, repo, [CHILD], n, c, "child")
    by_arm: dict[str, list[float]] = {}
    for arm, latency in rows:
        by_arm.setdefault(arm, []).append(latency)
    inproc = statistics.median(by_arm["in-process"])
    child = statistics.median(by_arm["child"])
    print(f"harness from {repo}; {n} tasks, concurrency {c}")
    print(f"1. both arms interleaved in one run: {wall:.1f} s wall")
    print(f"   median trial latency, in-process noop: {inproc * 1000:8.1f} ms")
    print(f"   median trial latency, child process:   {child * 1000:8.1f} ms")
    ratio = child / max(inproc, 1e-6)
    print(f"   overhead per trial: +{(child - inproc) * 1000:.0f} ms wall, ratio {ratio:.1f}x")
    print(f"2. one arm per run: in-process {wall_in:.1f} s wall, {cpu_in:.2f} s CPU;")
    print(f"   child {wall_child:.1f} s wall, {cpu_child:.2f} s CPU")
    print(f"   CPU per trial of the child: +{(cpu_child - cpu_in) / n * 1000:.0f} ms")


if __name__ == "__main__":
    main()
