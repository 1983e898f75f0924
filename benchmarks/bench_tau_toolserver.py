"""tau-bench retail: one process per tool call (before) vs a tool server per trial (after).

    python benchmarks/bench_tau_toolserver.py [--tau-bench PATH] [--tasks 10] [--sandbox unsafe-local]

Imports tau-bench retail (``harness import tau-bench``), then runs the oracle on the first
N test tasks twice through the real CLI, in one process run so both sides share the
machine's load: once with the environment as imported (its tool server: state loaded once,
kept in memory, snapshots on request) and once with ``tool_server`` removed (every call
starts ``tau_runner.py call``, which reloads and rewrites the 2.3 MB database; the state is
dumped by a command). Reports p50 tool-call latency (from the trajectory events), p50 trial
time (start to finish, grading included) and the ratios.

Then, on airline (5 MB of data), the time and peak Python memory of one server snapshot
(JSON over the pipe, parsed) and of one strict state_diff of the whole state against the
expected state.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TAU = REPO.parent / "shared" / "third_party" / "tau-bench"


def _run_suite(suite: Path, store: Path, sandbox: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "harness.cli", "run", str(suite), "-q", "--sandbox", sandbox]
    subprocess.run(
        [*cmd, "--store", f"sqlite:///{store}"], env=env, check=True, capture_output=True
    )


def _measure(store: Path) -> tuple[list[float], list[float], int, int]:
    db = sqlite3.connect(store)
    trials = [
        r[0]
        for r in db.execute(
            "select (julianday(finished_at) - julianday(started_at)) * 86400 from trials"
        )
    ]
    passed = db.execute("select count(*) from trials where status = 'passed'").fetchone()[0]
    calls = [
        r[0] for r in db.execute("select latency_s from trajectory_events where kind = 'tool_call'")
    ]
    return [c for c in calls if c is not None], trials, passed, len(trials)


def latency(tau: Path, n_tasks: int, sandbox: str, work: Path) -> None:
    from harness.importers.tau_bench import import_tau_bench

    imported = import_tau_bench(tau, "retail", "test", work)
    env_dir = imported.environment
    slow_dir = env_dir.with_name("tau-bench-retail-percall")
    shutil.copytree(env_dir, slow_dir)
    spec = yaml.safe_load((slow_dir / "environment.yaml").read_text())
    spec.pop("tool_server")
    spec["name"] = slow_dir.name
    (slow_dir / "environment.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    task_dir = imported.suite.parent
    source = yaml.safe_load((task_dir / "tasks.yaml").read_text())
    results = {}
    for label, env_name in (("per call (before)", slow_dir.name), ("tool server", env_dir.name)):
        tasks = {**source, "defaults": {**source["defaults"], "environment": env_name}}
        tasks["tasks"] = source["tasks"][:n_tasks]
        tag = env_name.replace("tau-bench-", "")
        (task_dir / f"bench-{tag}.yaml").write_text(yaml.safe_dump(tasks, sort_keys=False))
        suite = {
            "name": f"bench-{tag}",
            "tasks": [f"bench-{tag}.yaml"],
            "environments_dir": "../../environments",
            "concurrency": 1,
            "arms": [{"name": "oracle", "agent": "oracle"}],
        }
        path = task_dir / f"bench-{tag}-suite.yaml"
        path.write_text(yaml.safe_dump(suite))
        store = work / f"{tag}.db"
        start = time.perf_counter()
        _run_suite(path, store, sandbox)
        wall = time.perf_counter() - start
        results[label] = (*_measure(store), wall)

    print(f"tau-bench retail oracle, {n_tasks} tasks, sandbox {sandbox}, concurrency 1")
    print(f"{'':18} {'tool call p50':>14} {'calls':>6} {'trial p50':>10} {'passed':>7} {'wall':>8}")
    for label, (calls, trials, passed, n, wall) in results.items():
        print(
            f"{label:18} {statistics.median(calls) * 1000:11.1f} ms {len(calls):6d} "
            f"{statistics.median(trials):8.2f} s {passed:3d}/{n:<3d} {wall:6.1f} s"
        )
    (bc, bt, *_), (ac, at, *_) = results.values()
    print(
        f"ratio before/after: tool call {statistics.median(bc) / statistics.median(ac):.1f}x, "
        f"trial {statistics.median(bt) / statistics.median(at):.1f}x"
    )


def snapshot_cost(tau: Path, work: Path) -> None:
    import anyio

    from graders import build_grader
    from graders.base import Evidence
    from harness.config.loader import load_environment, load_task_file
    from harness.importers.tau_bench import import_tau_bench
    from harness.sandbox.base import SandboxRequest
    from harness.sandbox.local import LocalProvider
    from harness.tools.client import ToolServer

    imported = import_tau_bench(tau, "airline", "test", work)
    env = load_environment(work / "environments", "tau-bench-airline", imported.suite)
    tasks = load_task_file(imported.suite.parent / "tasks.yaml")
    task = next(t.task for t in tasks if "expected_patch" in t.task.graders[0].model_dump())

    async def go() -> None:
        sandbox = await LocalProvider().create(SandboxRequest(environment=env, image_id=None))
        try:
            server = await ToolServer.start(sandbox, env.spec.tool_server)
            assert server is not None
            for action in task.solution.actions:
                await server.call(action.tool, action.args, 30)
            times = []
            tracemalloc.start()
            for _ in range(3):
                t = time.perf_counter()
                final = await server.snapshot()
                times.append(time.perf_counter() - t)
            _, peak_snap = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            await server.close()
        finally:
            await sandbox.destroy()
        s0 = json.loads(
            subprocess.run(
                [sys.executable, "-S", str(env.files_dir / "tau_runner.py"), "dump"],
                capture_output=True,
                check=True,
            ).stdout
        )
        size = len(json.dumps(final))
        grader = build_grader(task.graders[0])
        evidence = Evidence(task=task, initial_state=s0, final_state=final)
        tracemalloc.start()
        gtimes = []
        for _ in range(3):
            t = time.perf_counter()
            verdict = await grader.grade(evidence)
            gtimes.append(time.perf_counter() - t)
        _, peak_grade = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        state_bytes = len(pickle.dumps(final))
        print(
            f"airline state {size / 1e6:.1f} MB as JSON ({state_bytes / 1e6:.1f} MB pickled); "
            f"task {task.id}: verdict {'pass' if verdict.passed else 'fail'}"
        )
        print(
            f"snapshot (request, JSON over the pipe, parse): p50 {statistics.median(times):.3f} s, "
            f"peak traced memory {peak_snap / 1e6:.0f} MB"
        )
        print(
            f"strict state_diff of the whole state: p50 {statistics.median(gtimes):.3f} s, "
            f"peak traced memory {peak_grade / 1e6:.0f} MB"
        )

    anyio.run(go)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tau-bench", type=Path, default=DEFAULT_TAU)
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--sandbox", default="unsafe-local")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory() as tmp:
        latency(args.tau_bench, args.tasks, args.sandbox, Path(tmp) / "retail")
        snapshot_cost(args.tau_bench, Path(tmp) / "airline")


if __name__ == "__main__":
    main()
