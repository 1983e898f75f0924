"""Per-trial overhead of the Docker sandbox backend against the raw Docker SDK floor.

One trial = create a sandbox, run a setup command, run one command, snapshot the state
(``files`` walk of /work), destroy. The floor does the same operations with the bare SDK:
``containers.create`` + ``start``, three ``exec_run`` calls, ``remove(force=True)``, with
the same image id and the same container settings (init, no network, caps dropped, limits),
from plain threads. Both run in the same process on the same image, interleaved.

    python benchmarks/bench_docker.py [--trials 20] [--throughput-trials 24]

Reports the median per-trial latency ratio at concurrency 1 (target <= 1.25) and trials per
second at concurrency 1, 2, 4 and 8 (target at 8: >= 80% of the floor's throughput).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.config.models import EnvironmentSpec, Limits, StateSpec  # noqa: E402
from harness.sandbox.base import (  # noqa: E402
    _FS_STATE_SCRIPT,
    Environment,
    SandboxRequest,
    snapshot_state,  # noqa: E402
)
from harness.sandbox.docker import DockerProvider  # noqa: E402

SETUP = "echo setup > /work/state.txt"
COMMAND = "cat /work/state.txt && ls /work"
SNAPSHOT = f"python3 -c {shlex.quote(_FS_STATE_SCRIPT)} {shlex.quote(json.dumps(['/work']))}"
LABELS = {"harness.run": "bench", "harness.bench": "1"}


def make_env(root: Path) -> Environment:
    spec = EnvironmentSpec(
        name="bench",
        image={"ref": "harness-base:latest"},
        user="agent",
        state=StateSpec(kind="files", paths=["/work"]),
    )
    return Environment(spec, root)


# ----------------------------------------------------------------------------- harness
async def harness_trial(provider: DockerProvider, env: Environment, image_id: str) -> float:
    start = time.perf_counter()
    sandbox = await provider.create(SandboxRequest(env, image_id, labels=LABELS, limits=Limits()))
    try:
        assert (await sandbox.exec(SETUP, timeout=60)).ok
        assert (await sandbox.exec(COMMAND, timeout=60)).ok
        await snapshot_state(sandbox, env)
    finally:
        await sandbox.destroy()
    return time.perf_counter() - start


async def harness_batch(provider, env, image_id, n: int, concurrency: int) -> float:
    limiter = anyio.Semaphore(concurrency)

    async def one():
        async with limiter:
            await harness_trial(provider, env, image_id)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    return n / (time.perf_counter() - start)


# ----------------------------------------------------------------------------- raw floor
def raw_trial(client, image_id: str) -> float:
    start = time.perf_counter()
    c = client.containers.create(
        image_id,
        entrypoint=["sleep", "infinity"],
        user="agent",
        working_dir="/work",
        labels={"harness": "1", **LABELS},
        init=True,
        network_mode="none",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        pids_limit=256,
        mem_limit="1g",
        memswap_limit="1g",
        nano_cpus=int(1e9),
    )
    try:
        c.start()
        for cmd in (SETUP, COMMAND, SNAPSHOT):
            r = c.exec_run(["bash", "-c", cmd], workdir="/work", demux=True)
            assert r.exit_code == 0, r
    finally:
        c.remove(force=True)
    return time.perf_counter() - start


def raw_batch(client, image_id: str, n: int, concurrency: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda _: raw_trial(client, image_id), range(n)))
    return n / (time.perf_counter() - start)


# ----------------------------------------------------------------------------- main
async def main(args) -> int:
    import docker

    root = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    env = make_env(root)
    provider = DockerProvider(max_concurrency=32)
    raw = docker.from_env(timeout=120, max_pool_size=32)
    try:
        image_id = (await provider.prepare([env]))["bench"]
        # warm-up both paths (page cache, connection pools)
        await harness_trial(provider, env, image_id)
        await anyio.to_thread.run_sync(raw_trial, raw, image_id)

        h_lat, r_lat = [], []
        for _ in range(args.trials):  # interleaved, so drift hits both equally
            h_lat.append(await harness_trial(provider, env, image_id))
            r_lat.append(await anyio.to_thread.run_sync(raw_trial, raw, image_id))
        h_med, r_med = statistics.median(h_lat), statistics.median(r_lat)
        ratio = h_med / r_med

        rows = []
        for c in (1, 2, 4, 8):
            n = max(args.throughput_trials, 2 * c)
            r_tps = await anyio.to_thread.run_sync(raw_batch, raw, image_id, n, c)
            h_tps = await harness_batch(provider, env, image_id, n, c)
            rows.append((c, n, h_tps, r_tps, h_tps / r_tps))
    finally:
        await provider.close()
        raw.close()

    print(f"image {image_id[:19]}  trials/latency sample: {args.trials}")
    print(
        f"per-trial median latency: harness {h_med * 1000:.0f} ms, raw SDK {r_med * 1000:.0f} ms, "
        f"ratio {ratio:.3f} (target <= 1.25) {'OK' if ratio <= 1.25 else 'MISSED'}"
    )
    print(f"{'concurrency':>11} {'trials':>6} {'harness/s':>10} {'raw/s':>8} {'share':>7}")
    for c, n, h, r, share in rows:
        print(f"{c:>11} {n:>6} {h:>10.2f} {r:>8.2f} {share:>6.0%}")
    share8 = rows[-1][4]
    print(
        f"throughput at 8: {share8:.0%} of the raw floor (target >= 80%) {'OK' if share8 >= 0.8 else 'MISSED'}"
    )
    return 0 if ratio <= 1.25 and share8 >= 0.8 else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="latency sample size per side")
    ap.add_argument("--throughput-trials", type=int, default=24, help="trials per batch")
    sys.exit(anyio.run(main, ap.parse_args()))
