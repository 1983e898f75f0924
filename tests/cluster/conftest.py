"""Fixtures for the cluster tests: a real local Ray cluster, Docker, fresh PostgreSQL databases.

The Ray cluster runs on loopback: a head node with no ``docker`` resource (so no trial runs
there) and worker nodes that declare ``docker``. Each node is one ``ray start --block``
process in its own session; killing that process tree kills exactly that node (its raylet,
object store and worker processes), which is how the tests lose a node mid-run.

Without ray (or Docker) these tests SKIP with the reason, except under ``CI=true`` where they
FAIL: CI must install the ``ray`` extra and run them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BASE_IMAGE = "harness-base:latest"


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        unavailable("ray is not installed (pip install 'harness[ray]')")
    if _ray_cli() is None:
        unavailable("the `ray` command is not on PATH")


def _ray_cli() -> str | None:
    found = shutil.which("ray")
    if found:
        return found
    beside = Path(sys.executable).parent / "ray"
    return str(beside) if beside.exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayCluster:
    """A head node and worker nodes started on loopback, each killable on its own."""

    def __init__(self, base: Path):
        self.base = base
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, subprocess.Popen] = {}
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RAY_USAGE_STATS_ENABLED": "0",
            # notice a dead node within a few seconds (defaults take ~30 s)
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
        }

    def _start(self, name: str, args: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.base / f"{name}.log", "wb")  # noqa: SIM115 - lives with the node
        proc = subprocess.Popen(
            [_ray_cli(), "start", "--block", "--disable-usage-stats", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**self.env, **(env or {})},
            cwd=self.base,
            start_new_session=True,
        )
        self.nodes[name] = proc
        return proc

    def _common(self, docker: int, cpus: int, extra: dict[str, int] | None = None) -> list[str]:
        resources = json.dumps({"docker": docker, **(extra or {})})
        return [
            "--node-ip-address=127.0.0.1",
            f"--num-cpus={cpus}",
            f"--resources={resources}",
            "--object-store-memory=400000000",
        ]

    def start_head(self) -> None:
        self._start(
            "head",
            [
                "--head",
                f"--port={self.port}",
                "--include-dashboard=false",
                *self._common(docker=0, cpus=1),
            ],
        )

    def add_worker(
        self,
        name: str,
        docker: int = 4,
        cpus: int = 1,
        resources: dict[str, int] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """A worker node; ``env`` reaches its processes (e.g. another ``DOCKER_HOST``)."""
        args = [f"--address={self.address}", *self._common(docker, cpus, resources)]
        self._start(name, args, env)

    def docker_total(self, resource: str = "docker") -> float | None:
        """The cluster's total of a resource (None while the head does not answer)."""
        try:
            out = subprocess.run(
                [_ray_cli(), "status", f"--address={self.address}"],
                capture_output=True,
                text=True,
                timeout=60,
                env=self.env,
            ).stdout
        except subprocess.TimeoutExpired:
            return None
        m = re.search(rf"[\d.]+/([\d.]+) {re.escape(resource)}\b", out)
        if m:
            return float(m.group(1))
        return 0.0 if "Resources" in out else None

    def wait_docker(self, total: float, timeout: float = 180, resource: str = "docker") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.nodes.items():
                if proc.poll() is not None and name != "lost":
                    log = (self.base / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"ray node {name} exited: {log}")
            if self.docker_total(resource) == total:
                return
            time.sleep(1)
        raise TimeoutError(f"the Ray cluster never reached {total} {resource} slots")

    def kill(self, name: str) -> None:
        """SIGKILL one node: its `ray start` process and every process under it."""
        proc = self.nodes.pop(name)
        for pid in [proc.pid, *_descendants(proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        for name in list(self.nodes):
            self.kill(name)
        subprocess.run(
            [_ray_cli(), "stop", "--force"], capture_output=True, env=self.env, timeout=120
        )


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), children first found first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """Head (0 docker slots) + worker 'w1' (4 docker slots), for the whole session."""
    require_ray()
    cluster = RayCluster(tmp_path_factory.mktemp("ray"))
    try:
        cluster.start_head()
        cluster.add_worker("w1", docker=4)
        cluster.wait_docker(4)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def docker_ready():
    from harness.sandbox.docker import docker_available

    if not docker_available():
        unavailable("no Docker daemon answers (start one: bash docker/ci-setup.sh)")
    import docker.errors

    import docker

    client = docker.from_env(timeout=120)
    try:
        client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        unavailable(f"image {BASE_IMAGE} is missing (build it: bash docker/ci-setup.sh)")
    yield client
    client.close()


@pytest.fixture
def fresh_pg(postgres_url):
    """A new, empty PostgreSQL database on the session's server; its URL."""
    import psycopg

    admin = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def second_docker_daemon(docker_ready):
    """Another dockerd on this machine, empty (``tests.dockerd``): a stand-in for a worker
    node's own daemon. Yields its ``DOCKER_HOST`` URL; stopped and removed afterwards."""
    from tests.dockerd import PrivateDockerd

    daemon = PrivateDockerd()
    try:
        daemon.start()
        yield daemon.url
    finally:
        daemon.remove()
