"""A Docker daemon of a test's own: own data root, exec root, socket and bridge, no iptables
rules. A test that stops a daemon stops this one, never the machine's (which every other
test, and every other process on the machine, is using)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


class PrivateDockerd:
    """Start with ``start()``; ``stop()`` ends it as an outage would (SIGTERM: its containers
    die with it); ``start()`` again brings it back on the same data root; ``remove()`` at
    the end. ``url`` is its ``DOCKER_HOST``."""

    def __init__(self, subnet: str = "10.231.47.1/24"):
        if os.geteuid() != 0 or shutil.which("dockerd") is None or shutil.which("ip") is None:
            unavailable("a second dockerd needs root, dockerd and ip")
        tag = uuid.uuid4().hex[:6]
        self.base = Path(f"/tmp/hx-d2-{tag}")  # short: unix socket paths are limited
        self.base.mkdir()
        # Never --bridge=none: that makes dockerd delete the host's docker0, which the
        # machine's daemon needs.
        self.bridge = f"hxd2{tag}"
        for cmd in (
            ["ip", "link", "add", self.bridge, "type", "bridge"],
            ["ip", "addr", "add", subnet, "dev", self.bridge],
            ["ip", "link", "set", self.bridge, "up"],
        ):
            subprocess.run(cmd, check=True, capture_output=True)
        self.url = f"unix://{self.base / 'docker.sock'}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        import docker

        log = open(self.base / "dockerd.log", "ab")  # noqa: SIM115 - the daemon holds it
        self.proc = subprocess.Popen(
            [
                "dockerd",
                f"--data-root={self.base / 'root'}",
                f"--exec-root={self.base / 'exec'}",
                f"--pidfile={self.base / 'docker.pid'}",
                f"--host={self.url}",
                f"--bridge={self.bridge}",
                "--iptables=false",
                "--ip6tables=false",
                "--ip-masq=false",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(self.log()[-2000:])
            try:
                client = docker.DockerClient(base_url=self.url, timeout=5)
                client.ping()
                client.close()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def answers(self) -> bool:
        import docker

        try:
            client = docker.DockerClient(base_url=self.url, timeout=3)
            client.ping()
            client.close()
            return True
        except Exception:
            return False

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None

    def load_image(self, ref: str) -> None:
        """Copy an image from the machine's daemon (no registry is reachable)."""
        save = subprocess.Popen(["docker", "save", ref], stdout=subprocess.PIPE)
        subprocess.run(
            ["docker", "-H", self.url, "load", "-q"],
            stdin=save.stdout,
            check=True,
            capture_output=True,
        )
        assert save.wait() == 0

    def log(self) -> str:
        return (self.base / "dockerd.log").read_text(errors="replace")

    def remove(self) -> None:
        self.stop()
        subprocess.run(["umount", "-R", str(self.base / "root")], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def private_dockerd():
    """A running ``PrivateDockerd``; removed afterwards."""
    daemon = PrivateDockerd()
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.remove()
