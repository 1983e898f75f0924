"""Teardown and garbage collection: nothing a trial created outlives it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess

import docker.errors
import pytest
from docker_helpers import BASE_IMAGE

from harness.sandbox.docker import gc
from harness.sandbox.docker_gc import owner_labels

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


def _labelled(client, labels: dict[str, str]):
    return client.containers.create(
        BASE_IMAGE, entrypoint=["sleep", "infinity"], labels=labels, network_mode="none"
    )


def _exists(client, cid: str) -> bool:
    try:
        client.api.inspect_container(cid)
        return True
    except docker.errors.NotFound:
        return False


async def test_destroy_removes_the_container(provider, root_env, request_for, test_label):
    a = await provider.create(request_for(root_env))
    b = await provider.create(request_for(root_env))
    client = provider._client
    assert _exists(client, a.id) and _exists(client, b.id)
    await a.destroy()
    await a.destroy()  # idempotent
    assert not _exists(client, a.id)
    await b.destroy(interrupted=True)
    remaining = client.containers.list(
        all=True, filters={"label": f"harness.test={test_label['harness.test']}"}
    )
    assert remaining == []


async def test_close_removes_sandboxes_never_destroyed(docker_client, root_env, request_for):
    from harness.sandbox.docker import DockerProvider

    p = DockerProvider()
    s = await p.create(request_for(root_env))
    await p.close()
    assert not _exists(docker_client, s.id)


def test_gc_removes_leftovers_of_dead_runs_only(docker_client, test_label):
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    base = {"harness": "1", **test_label}
    gone = {"harness.host": host, "harness.pid": str(dead.pid), "harness.run": "r-alive"}
    dead_owner = _labelled(docker_client, {**base, **gone, "harness.uid": str(os.getuid())})
    # A shared machine: another user's dead run, and one from a harness that named no user.
    other_user = _labelled(docker_client, {**base, **gone, "harness.uid": str(os.getuid() + 1)})
    unnamed_user = _labelled(docker_client, {**base, **gone})
    live_owner = _labelled(docker_client, {**base, **owner_labels(), "harness.run": "r-dead"})
    remote_dead_run = _labelled(
        docker_client,
        {**base, "harness.host": "elsewhere", "harness.pid": "1", "harness.run": "r-dead"},
    )
    remote_live_run = _labelled(
        docker_client,
        {**base, "harness.host": "elsewhere", "harness.pid": "1", "harness.run": "r-alive"},
    )
    try:
        removed = gc(docker_client)  # no run list: only owners known dead on this host
        assert dead_owner.id in removed
        assert not {live_owner.id, remote_dead_run.id, remote_live_run.id} & set(removed)
        assert not {other_user.id, unnamed_user.id} & set(removed)

        removed = gc(docker_client, running_run_ids={"r-alive"})
        assert remote_dead_run.id in removed
        assert not {live_owner.id, remote_live_run.id} & set(removed)  # live owner: never
        assert _exists(docker_client, other_user.id) and _exists(docker_client, unnamed_user.id)
        assert _exists(docker_client, live_owner.id) and _exists(docker_client, remote_live_run.id)
        assert not _exists(docker_client, dead_owner.id)
    finally:
        for c in (dead_owner, live_owner, remote_dead_run, remote_live_run, other_user,
                  unnamed_user):  # fmt: skip
            with contextlib.suppress(docker.errors.NotFound):
                c.remove(force=True)


def test_gc_removes_the_allowlist_network_and_rules_of_a_dead_run(docker_client):
    from harness.sandbox.docker_network import Allowlist

    dead = subprocess.Popen(["true"])
    dead.wait()
    owner = {
        "harness.host": socket.gethostname(),
        "harness.pid": str(dead.pid),
        "harness.uid": str(os.getuid()),
    }
    allow = Allowlist("gc-test", ["192.0.2.1"])
    allow.create(docker_client, owner)  # as a run killed before it could clean up leaves it

    def rules() -> str:
        return subprocess.run(
            ["iptables", "-S", "DOCKER-USER"], capture_output=True, text=True
        ).stdout

    try:
        assert allow.bridge in rules()
        gc(docker_client)
        assert allow.bridge not in rules()
        assert not docker_client.networks.list(names=[allow.network_name])
    finally:
        allow.remove(docker_client)
