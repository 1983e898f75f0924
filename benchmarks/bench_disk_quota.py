"""What the per-trial disk quota costs: one sandbox's life with it, against a checkout
without it, side by side.

    python benchmarks/bench_disk_quota.py --against DIR [--n 20] [--rounds 3]

For each backend (bwrap, docker) and each checkout (``--against DIR`` first, then this one),
alternately for ``--rounds`` rounds (so load on the machine falls on both alike): a fresh
Python process creates ``--n`` sandboxes of the ``shell`` environment one after another,
runs one command in each, destroys it, and prints the median seconds. The figure is the
ratio of medians, this checkout to the other. Run as root (the quota needs it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.checkout_child import run_in  # noqa: E402

_CHILD = r"""
import json, statistics, sys, time
import anyio
from harness.config.loader import load_suite
from harness.config.models import Limits
from harness.sandbox.base import SandboxRequest

backend, n = sys.argv[1], int(sys.argv[2])
limits = Limits(memory="256m", pids=64)
env = load_suite("tasks/shell/suite.yaml").environments["shell"]


async def measure():
    if backend == "bwrap":
        from harness.sandbox.bwrap import BwrapProvider
        provider = BwrapProvider(limits=limits)
    else:
        from harness.sandbox.docker import DockerProvider
        provider = DockerProvider()
    ids = await provider.prepare([env])
    warm = await provider.create(SandboxRequest(env, ids["shell"], limits=limits))
    await warm.destroy()  # one-off work (the quota's survey of the image) not counted
    times = []
    try:
        for _ in range(n):
            start = time.perf_counter()
            sandbox = await provider.create(SandboxRequest(env, ids["shell"], limits=limits))
            await sandbox.exec("cat etc/app.conf >/dev/null", timeout=30)
            await sandbox.destroy()
            times.append(time.perf_counter() - start)
    finally:
        await provider.close()
    print(json.dumps({"median_s": statistics.median(times)}))


anyio.run(measure)
"""


def _median(root: Path, backend: str, n: int) -> float:
    result = run_in(root, _CHILD, backend, str(n))
    if "error" in result:
        raise SystemExit(f"{root} ({backend}): {result['error']}")
    return float(result["median_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="a checkout without it")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="bwrap,docker")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        before, after = [], []
        for _ in range(args.rounds):
            before.append(_median(args.against, backend, args.n))
            after.append(_median(REPO, backend, args.n))
        b, a = statistics.median(before), statistics.median(after)
        print(
            f"{backend}: per sandbox {b * 1000:.0f} ms without the quota, {a * 1000:.0f} ms "
            f"with it: ratio {a / b:.2f} (median of {args.rounds} rounds of {args.n})"
        )


if __name__ == "__main__":
    main()
