"""Per-trial overhead of a multi-container task on Docker against a single-container one,
side by side in one run.

    python benchmarks/bench_services.py [--trials 10] [--rounds 3]

Three environments on the offline base image: the agent's container alone; the same with
one service (a small HTTP server) without a healthcheck; and with a healthcheck (polled
every 0.2 s). Each trial is what the Docker backend does for a trial's agent sandbox:
create it (its services, volume and network first), run one command in it that reaches the
service when there is one, destroy it (services and all). Images are pinned before timing.
The kinds run interleaved, one trial at a time, ``--trials`` per kind per round; prints
the median seconds per trial of each kind and the ratio to the single container.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.config.models import Environment, EnvironmentSpec, Limits  # noqa: E402
from harness.sandbox.base import SandboxRequest  # noqa: E402
from harness.sandbox.docker import DockerProvider  # noqa: E402

SERVER = (
    "import http.server\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')\n"
    "    def log_message(self, *a): pass\n"
    "http.server.ThreadingHTTPServer(('0.0.0.0', 8000), H).serve_forever()\n"
)
REACH = (
    'python3 -c "import urllib.request as u, time\n'
    "for _ in range(100):\n"
    "    try: u.urlopen('http://api:8000/', timeout=1); break\n"
    '    except OSError: time.sleep(0.05)"'
)


def environments(root: Path) -> dict[str, Environment]:
    (root / "api").mkdir()
    (root / "api" / "server.py").write_text(SERVER)
    (root / "api" / "Dockerfile").write_text(
        'FROM harness-base:latest\nCOPY server.py /srv/server.py\nCMD ["python3", "/srv/server.py"]\n'
    )
    health = {
        "command": [
            "python3",
            "-c",
            "import urllib.request as u; u.urlopen('http://localhost:8000/')",
        ],
        "interval_s": 0.2,
    }
    service = {"image": {"dockerfile": "Dockerfile"}, "context": "api"}
    specs = {
        "single": {},
        "service": {"services": {"api": service}},
        "service+health": {"services": {"api": {**service, "healthcheck": health}}},
    }
    return {
        kind: Environment(
            EnvironmentSpec(
                name=f"bench-svc-{i}", image={"ref": "harness-base:latest"}, user="root", **extra
            ),
            root,
        )
        for i, (kind, extra) in enumerate(specs.items())
    }


async def trial(provider: DockerProvider, env: Environment) -> float:
    t0 = time.perf_counter()
    box = await provider.create(SandboxRequest(env, None, {"harness.bench": "services"}, Limits()))
    try:
        command = REACH if env.spec.services else "true"
        result = await box.exec(command, timeout=60)
        assert result.ok, result
    finally:
        await box.destroy()
    return time.perf_counter() - t0


async def main(trials: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        envs = environments(Path(tmp))
        provider = DockerProvider()
        try:
            await provider.prepare(list(envs.values()))
            times: dict[str, list[float]] = {kind: [] for kind in envs}
            for _ in range(rounds):
                for _ in range(trials):
                    for kind, env in envs.items():
                        times[kind].append(await trial(provider, env))
        finally:
            await provider.close()
    base = statistics.median(times["single"])
    print(f"{trials * rounds} trials per kind, interleaved, one at a time")
    print(f"{'kind':<16}{'median s/trial':>16}{'p90':>8}{'x single':>10}")
    for kind, got in times.items():
        med = statistics.median(got)
        p90 = statistics.quantiles(got, n=10)[-1]
        print(f"{kind:<16}{med:>16.3f}{p90:>8.3f}{med / base:>10.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.trials, args.rounds)
