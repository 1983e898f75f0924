"""Fixtures for the Docker backend tests (real daemon, real containers).

Without a daemon (or without ``harness-base:latest``) these tests SKIP with the reason,
except under ``CI=true`` where they FAIL: CI must run them (``bash docker/ci-setup.sh``).
Every test gets a unique ``harness.test`` label; containers still carrying it at teardown
are removed and reported as a failure of the test that leaked them.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, Path(__file__).resolve().parent):  # the repo, and docker_helpers
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from docker_helpers import BASE_IMAGE, FIXTURES, make_env  # noqa: E402

from harness.config.models import Limits, StateSpec  # noqa: E402
from harness.sandbox.base import Environment, SandboxRequest  # noqa: E402


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client():
    from harness.sandbox.docker import docker_available

    if not docker_available():
        _unavailable("no Docker daemon answers (start one: bash docker/ci-setup.sh)")
    import docker.errors

    import docker

    client = docker.from_env(timeout=120)
    try:
        client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        _unavailable(f"image {BASE_IMAGE} is missing (build it: bash docker/build-base.sh)")
    yield client
    client.close()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def test_label(docker_client):
    """A unique label for this test's containers; asserts none is left behind."""
    value = uuid.uuid4().hex[:12]
    yield {"harness.test": value}
    leftovers = docker_client.containers.list(all=True, filters={"label": f"harness.test={value}"})
    for c in leftovers:
        c.remove(force=True)
    assert not leftovers, f"test left containers behind: {[c.short_id for c in leftovers]}"


@pytest.fixture
async def provider(docker_client):
    from harness.sandbox.docker import DockerProvider

    p = DockerProvider()
    yield p
    await p.close()


@pytest.fixture
def root_env() -> Environment:
    """ref image + files baked by the provider, running as root."""
    return make_env(
        "test-root",
        FIXTURES / "rootenv",
        image={"ref": BASE_IMAGE},
        files="files",
        user="root",
        state=StateSpec(kind="files", paths=["/work"]),
    )


@pytest.fixture
def agent_env() -> Environment:
    """Dockerfile that COPYs its files, running as the non-root user ``agent``."""
    return make_env(
        "test-agent",
        FIXTURES / "copyfiles",
        image={"dockerfile": "Dockerfile"},
        files="files",
        user="agent",
        state=StateSpec(kind="files", paths=["/work"]),
    )


@pytest.fixture
def request_for(test_label):
    def make(env: Environment, image_id: str | None = None, limits: Limits | None = None):
        return SandboxRequest(
            environment=env,
            image_id=image_id,
            labels={**test_label, "harness.run": "test-run", "harness.trial": "0"},
            limits=limits or Limits(),
        )

    return make
