"""A ready-made agent's image: the task image plus exactly one layer holding its CLI.

A small script stands in for the CLI (the real ones run in ``test_docker_cli_agents.py``):
what is checked here is the image itself, its reuse, its lock entry, the sandbox made
from it, and its trip to a worker node that lacks it.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import uuid
from pathlib import Path

import pytest

from harness.errors import SandboxError
from harness.sandbox.base import AGENT_DIR, AgentBuild
from harness.sandbox.docker import DockerProvider
from harness.sandbox.docker_agent_images import SPEC_LABEL
from harness.sandbox.docker_images import export_image
from harness.sandbox.lock_compare import check_lock

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake_cli(tmp_path: Path, docker_client):
    """A build of a fake CLI (unique spec, so no other test's image is reused); its
    images are removed afterwards. ``fetched`` counts the host downloads."""
    exe = tmp_path / "fake"
    exe.write_text('#!/bin/sh\necho "fake-cli ran: $*"\n')
    fetched: list[int] = []
    version = uuid.uuid4().hex[:8]

    def fetch() -> Path:
        fetched.append(1)
        return exe

    build = AgentBuild(f"fake-{version}", f"@test/fake-cli@{version}", "fake", fetch)
    yield build, fetched
    for image in docker_client.images.list(filters={"label": f"{SPEC_LABEL}={build.spec}"}):
        docker_client.images.remove(image.id, force=True)


def _layer_members(docker_client, image_id: str, diff_id: str) -> list[str]:
    """Names in the layer whose uncompressed tar has digest ``diff_id`` (from docker save)."""
    stream = docker_client.api.get_image(image_id)
    with tarfile.open(fileobj=_Chunks(stream), mode="r|") as outer:
        for member in outer:
            if not member.name.endswith("layer.tar"):
                continue
            data = outer.extractfile(member).read()  # type: ignore[union-attr]
            if "sha256:" + hashlib.sha256(data).hexdigest() == diff_id:
                with tarfile.open(fileobj=io.BytesIO(data)) as layer:
                    return layer.getnames()
    raise AssertionError(f"layer {diff_id} not in the saved image")


class _Chunks:
    """A read-only file over the chunks of a streamed HTTP body."""

    def __init__(self, chunks):
        self._it, self._buf = iter(chunks), b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._buf) < n:
            chunk = next(self._it, None)
            if chunk is None:
                break
            self._buf += chunk
        out, self._buf = (self._buf, b"") if n < 0 else (self._buf[:n], self._buf[n:])
        return out


async def test_the_agent_image_is_the_task_image_plus_one_layer(
    provider, root_env, request_for, docker_client, fake_cli
):
    build, fetched = fake_cli
    built = await provider.prepare_agents([(root_env, build)])
    task_id = provider.pinned_images()["test-root"].image_id
    agent_id = built["test-root"][build.key]
    assert agent_id != task_id and fetched == [1]

    base, derived = docker_client.images.get(task_id), docker_client.images.get(agent_id)
    layers = derived.attrs["RootFS"]["Layers"]
    assert (
        layers[:-1] == base.attrs["RootFS"]["Layers"]
        and len(layers) == len(base.attrs["RootFS"]["Layers"]) + 1
    )
    new_steps = derived.history()[: len(derived.history()) - len(base.history())]
    assert [h["CreatedBy"] for h in new_steps if h["Size"]] == [
        h["CreatedBy"] for h in new_steps if "COPY" in h["CreatedBy"]
    ]
    members = _layer_members(docker_client, agent_id, layers[-1])
    parents = {"opt", "opt/harness", AGENT_DIR.strip("/")}
    assert {m for m in members if m not in parents} == {
        f"{AGENT_DIR.strip('/')}/{build.key}",
        build.path.strip("/"),
    }
    labels = derived.labels
    assert labels["harness.agent.base"] == task_id and labels[SPEC_LABEL] == build.spec
    assert labels["harness.files.key"] == ""  # never found as its base's files bake

    # Reused by the next run: same id, nothing fetched or built again.
    again = DockerProvider()
    try:
        assert (await again.prepare_agents([(root_env, build)])) == built
        assert await again.prepare([root_env]) == {"test-root": task_id}
    finally:
        await again.close()
    assert fetched == [1]

    # The lock entry holds the spec and the image; a changed spec is one line naming both.
    entry = (await provider.lock_entries([root_env]))["test-root"]
    assert entry["agents"] == {build.key: {"npm": build.spec, "image_id": agent_id}}
    old = {**entry, "agents": {build.key: {"npm": "@test/fake-cli@0", "image_id": agent_id}}}
    assert check_lock({"test-root": old}, {"test-root": entry}) == [
        f"environment 'test-root': agent CLI {build.key} npm is {build.spec} but the lock "
        "says @test/fake-cli@0"
    ]

    # A sandbox for the agent's arm runs that image, the CLI from its path, root-owned.
    request = request_for(root_env, task_id)
    request.agent = build
    sandbox = await provider.create(request)
    try:
        assert (sandbox.image_id, sandbox.agent_path) == (agent_id, build.path)
        ran = await sandbox.exec(f"{build.path} ok && stat -c '%U %a' {build.path}")
        assert ran.stdout.split("\n")[:2] == ["fake-cli ran: ok", "root 755"], ran
    finally:
        await sandbox.destroy()


async def test_a_worker_node_gets_the_agent_images_too(provider, root_env, docker_client, fake_cli):
    """What the driver ships (``pinned_images``) includes the agent images; a node lacking
    one refuses without a way to fetch it, and loads it, same id, with one."""
    build, _ = fake_cli
    agent_id = (await provider.prepare_agents([(root_env, build)]))["test-root"][build.key]
    pinned = provider.pinned_images()
    task_id = pinned["test-root"].image_id
    assert pinned["test-root"].all_image_ids() == [task_id, agent_id]
    archive = export_image(docker_client, agent_id)
    docker_client.images.remove(agent_id, force=True)  # this "node" lacks it now

    worker = DockerProvider()
    try:
        with pytest.raises(SandboxError, match=f"no image {agent_id[:19]}.*'test-root'"):
            await worker.adopt_images(pinned, None)
        asked: list[str] = []
        await worker.adopt_images(pinned, lambda image_id: asked.append(image_id) or archive)
        assert asked == [agent_id]
        assert docker_client.images.get(agent_id).id == agent_id
    finally:
        await worker.close()
