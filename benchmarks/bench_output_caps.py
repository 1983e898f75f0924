"""The harness's memory while an agent's command prints a lot, per backend.

    python benchmarks/bench_output_caps.py [--mb 1024] [--backends unsafe-local,bwrap,docker]

For each backend, in a fresh Python process (so each peak is its own): one sandbox of the
``shell`` environment runs a command printing ``--mb`` MiB on stdout and as much on stderr;
the process's peak RSS (``ru_maxrss``) before and after, the bytes kept and counted, and the
time are printed. With ``--against DIR`` the same is measured for another checkout (say
``/work/main``) first, so the two are side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.checkout_child import run_in  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
import anyio
from harness.config.loader import load_suite
from harness.config.models import Limits
from harness.sandbox.base import SandboxRequest

backend, mb = sys.argv[1], int(sys.argv[2])
limits = Limits(memory="256m", pids=64)
env = load_suite("tasks/shell/suite.yaml").environments["shell"]


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


async def main():
    if backend == "bwrap":
        from harness.sandbox.bwrap import BwrapProvider
        provider = BwrapProvider(limits=limits)
    elif backend == "docker":
        from harness.sandbox.docker import DockerProvider
        provider = DockerProvider()
    else:
        from harness.sandbox.local import LocalProvider
        provider = LocalProvider()
    ids = await provider.prepare([env])
    sandbox = await provider.create(SandboxRequest(env, ids["shell"], limits=limits))
    try:
        before = peak_mib()
        start = time.monotonic()
        cmd = f"head -c {mb}M /dev/zero | tr '\\0' a; echo; echo END; head -c {mb}M /dev/zero >&2"
        result = await sandbox.exec(cmd, timeout=900)
        seconds = time.monotonic() - start
    finally:
        await sandbox.destroy()
        await provider.close()
    print(json.dumps({
        "backend": backend,
        "printed_mib": 2 * mb,
        "kept_bytes": len(result.stdout) + len(result.stderr),
        "dropped_bytes": getattr(result, "dropped", None),
        "tail_kept": result.stdout.rstrip().endswith("END"),
        "peak_rss_before_mib": before,
        "peak_rss_after_mib": peak_mib(),
        "seconds": round(seconds, 1),
    }))


anyio.run(main)
"""


def measure(root: Path, backend: str, mb: int) -> dict:
    return {"backend": backend, **run_in(root, _CHILD, backend, str(mb))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="MiB printed on each stream")
    parser.add_argument("--backends", default="unsafe-local,bwrap,docker")
    parser.add_argument("--against", type=Path, help="another checkout, measured first")
    args = parser.parse_args()
    roots = ([args.against] if args.against else []) + [REPO]
    for backend in args.backends.split(","):
        for root in roots:
            print(json.dumps({"checkout": str(root), **measure(root, backend, args.mb)}))


if __name__ == "__main__":
    main()
