"""Ready-made agent CLIs in Docker: building them into images, and what a trial pays.

1. **Build**: the Codex CLI's image on the shell environment's pinned image, the first time
   (a fresh build: the benchmark's own label keeps it from reusing another run's image) and
   the second time (a new provider finds it by its labels), then the image is removed.
2. **Per trial**, interleaved in one process on the same CLI bytes: before (the task image,
   the executable hard-linked into a per-trial directory mounted read-only at
   ``/run/harness``, as trials did until the CLI moved into the image) and after (the
   image holding the CLI): create the sandbox, run ``codex --version``, destroy.

    python benchmarks/bench_agent_images.py [--trials 7]

Needs Docker, harness-base:latest and the staged Codex CLI (`harness agents stage codex`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.agents.cli_agents import CodexAgent  # noqa: E402
from harness.config.loader import load_environment  # noqa: E402
from harness.config.models import Arm  # noqa: E402
from harness.sandbox.base import SandboxRequest  # noqa: E402
from harness.sandbox.docker import DockerProvider  # noqa: E402
from harness.sandbox.docker_agent_images import SPEC_LABEL  # noqa: E402

LABELS = {"harness.run": "bench-agent-images", "harness.bench": "1"}


async def _trial(provider: DockerProvider, request: SandboxRequest, exe: str) -> float:
    start = time.perf_counter()
    sandbox = await provider.create(request)
    try:
        result = await sandbox.exec(f"{exe} --version", timeout=60)
        assert result.ok and "codex" in result.stdout, result
    finally:
        await sandbox.destroy()
    return time.perf_counter() - start


async def main(trials: int) -> None:
    env = load_environment(ROOT / "environments", "shell", ROOT / "environments")
    arm = Arm(name="codex", agent="codex")
    real = CodexAgent.build(arm)
    # The same bytes under a spec of the benchmark's own: a fresh build, never reused.
    fresh = dataclasses.replace(real, spec=f"{real.spec}#bench-{uuid.uuid4().hex[:8]}")
    provider = DockerProvider()
    try:
        await provider.prepare([env])
        exe = real.fetch()  # staged ahead: the npm download is not part of the build time
        t0 = time.perf_counter()
        built = await provider.prepare_agents([(env, fresh)])
        first = time.perf_counter() - t0
        again = DockerProvider()
        try:
            t0 = time.perf_counter()
            assert await again.prepare_agents([(env, fresh)]) == built
            second = time.perf_counter() - t0
        finally:
            await again.close()
        print(
            f"build of the codex image on '{env.name}': first {first:.2f} s, reuse {second:.3f} s"
        )

        task_image = provider.pinned_images()[env.name].image_id
        before, after = [], []
        for _ in range(trials):
            socket_dir = tempfile.mkdtemp(prefix="harness-sock-")
            os.chmod(socket_dir, 0o755)
            t0 = time.perf_counter()
            os.link(exe, os.path.join(socket_dir, "codex"))  # what each trial used to do
            link = time.perf_counter() - t0
            old = SandboxRequest(env, task_image, LABELS, socket_dir=socket_dir)
            before.append(link + await _trial(provider, old, "/run/harness/codex"))
            os.unlink(os.path.join(socket_dir, "codex"))
            os.rmdir(socket_dir)
            new = SandboxRequest(env, task_image, LABELS, agent=fresh)
            after.append(await _trial(provider, new, fresh.path))
        b, a = statistics.median(before), statistics.median(after)
        print(
            f"per trial (create, codex --version, destroy), median of {trials}: "
            f"before (mount) {b:.3f} s, after (image) {a:.3f} s, ratio after/before {a / b:.2f}"
        )
    finally:
        await provider.close()
        import docker

        client = docker.from_env()
        for image in client.images.list(filters={"label": f"{SPEC_LABEL}={fresh.spec}"}):
            client.images.remove(image.id, force=True)
        client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=7)
    anyio.run(main, parser.parse_args().trials)
