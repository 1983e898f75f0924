"""Image pinning, lock files, broken recipes, and the no-daemon message."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
from docker_helpers import BASE_IMAGE, FIXTURES, make_env

from harness.errors import EnvironmentBuildError, SandboxError, is_retryable
from harness.sandbox.docker import DockerProvider, check_lock

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


def _build_tag(client, tag: str, content: str) -> str:
    dockerfile = f"FROM {BASE_IMAGE}\nRUN echo {content} > /version\n"
    image, _ = client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True)
    return image.id


async def test_pinned_id_survives_a_rebuilt_tag_and_lock_sees_it(
    docker_client, provider, request_for, tmp_path: Path
):
    tag = f"harness-test-pin-{uuid.uuid4().hex[:8]}:latest"
    (tmp_path / "Dockerfile").write_text(f"FROM {tag}\nRUN echo built-on-top > /layer\n")
    ref_env = make_env("pin-ref", tmp_path, image={"ref": tag})
    df_env = make_env("pin-dockerfile", tmp_path, image={"dockerfile": "Dockerfile"})
    first_id = _build_tag(docker_client, tag, "v1")
    try:
        pinned = await provider.prepare([ref_env, df_env])
        assert all(v.startswith("sha256:") for v in pinned.values())
        locked = await provider.lock_entries([ref_env, df_env])
        # Root environment on an image whose /work belongs to 'agent': a derived image
        # re-owns the workdir; the recipe id is the tag's id at prepare time.
        assert locked["pin-ref"]["recipe_image_id"] == first_id
        assert locked["pin-ref"]["image_id"] == pinned["pin-ref"]
        assert check_lock(locked, locked) == []

        s = await provider.create(request_for(ref_env))
        try:
            assert (await s.exec("cat /version")).stdout == "v1\n"
        finally:
            await s.destroy()

        second_id = _build_tag(docker_client, tag, "v2")  # the tag moves mid-run
        assert second_id != first_id
        s = await provider.create(request_for(ref_env))
        try:
            assert (await s.exec("cat /version")).stdout == "v1\n"
            info = docker_client.api.inspect_container(s.id)
            assert s.image_id == pinned["pin-ref"] == info["Image"]
        finally:
            await s.destroy()

        # A new run resolves the tag again: the lock check names both environments.
        fresh = DockerProvider()
        try:
            current = await fresh.lock_entries([ref_env, df_env])
        finally:
            await fresh.close()
        problems = check_lock(locked, current)
        assert any("'pin-ref'" in p and "image_id" in p for p in problems), problems
        assert any("'pin-dockerfile'" in p and f"base image '{tag}'" in p for p in problems)
        assert check_lock({}, current) == [
            "environment 'pin-dockerfile': not in the lock file",
            "environment 'pin-ref': not in the lock file",
        ]
    finally:
        _remove_images(docker_client, tag, ("pin-ref", "pin-dockerfile"))


async def test_a_work_dir_of_root_is_never_handed_to_the_agent(
    docker_client, provider, request_for, tmp_path: Path
):
    """A work dir of / (a Harbor task without WORKDIR) is used as the image has it: the
    bake would re-own the whole file system for the agent's user; with the disk quota, the
    root itself is no writable place to bind over."""
    env = make_env("root-workdir", tmp_path, image={"ref": BASE_IMAGE}, workdir="/")
    pinned = await provider.prepare([env])
    assert pinned["root-workdir"] == docker_client.images.get(BASE_IMAGE).id  # no bake
    s = await provider.create(request_for(env))
    try:
        owners = await s.exec("stat -c %u / /etc /usr/bin; touch /etc/x || echo refused")
        assert owners.stdout.split() == ["0", "0", "0", "refused"], owners
        assert (await s.exec("touch /tmp/x && echo ok")).stdout == "ok\n"
    finally:
        await s.destroy()
    files = make_env(
        "root-files", FIXTURES / "rootenv", image={"ref": BASE_IMAGE}, workdir="/", files="files"
    )
    with pytest.raises(EnvironmentBuildError, match="work dir of /"):
        await provider.prepare([files])


def _remove_images(client, tag: str, environments: tuple[str, ...]) -> None:
    """Remove the test's images, children before parents (list order is arbitrary)."""
    import docker.errors

    ids = {
        image.id
        for name in environments
        for image in client.images.list(filters={"label": f"harness.environment={name}"})
    }
    for _ in range(5):
        for image_id in sorted(ids):
            try:
                client.images.remove(image_id, force=True)
                ids.discard(image_id)
            except docker.errors.ImageNotFound:
                ids.discard(image_id)
            except docker.errors.APIError:
                pass  # still has a child image: removed on a later pass
        if not ids:
            break
    client.images.remove(tag, force=True)


async def test_files_are_baked_once_and_reused(provider, root_env, agent_env):
    pinned = await provider.prepare([root_env, agent_env])
    entry_root = (await provider.lock_entries([root_env]))["test-root"]
    # ref image without the files: a derived image holds them; the same id on the next run.
    assert entry_root["image_id"] != entry_root["recipe_image_id"]
    again = DockerProvider()
    try:
        assert (await again.prepare([root_env]))["test-root"] == pinned["test-root"]
    finally:
        await again.close()
    # A Dockerfile that COPYs the files already: nothing baked.
    entry_agent = (await provider.lock_entries([agent_env]))["test-agent"]
    assert entry_agent["image_id"] == entry_agent["recipe_image_id"]
    assert entry_agent["files_digest"]


async def test_broken_recipes_raise_environment_build_error(provider):
    broken = make_env("broken-env", FIXTURES / "broken", image={"dockerfile": "Dockerfile"})
    with pytest.raises(EnvironmentBuildError, match="broken-env") as info:
        await provider.prepare([broken])
    assert "broken on purpose" in str(info.value)
    assert not is_retryable(info.value)

    missing = make_env("missing-ref", FIXTURES / "broken", image={"ref": "harness-no-such:1"})
    no_pull = DockerProvider(pull=False)
    try:
        with pytest.raises(EnvironmentBuildError, match="missing-ref"):
            await no_pull.prepare([missing])
    finally:
        await no_pull.close()

    ghost = make_env("ghost-user", FIXTURES / "rootenv", image={"ref": BASE_IMAGE}, user="ghost")
    with pytest.raises(EnvironmentBuildError, match="ghost-user"):
        await provider.prepare([ghost])


def test_no_daemon_names_the_local_alternative(tmp_path: Path):
    from harness.sandbox.docker import docker_available

    url = f"unix://{tmp_path}/no-such-docker.sock"
    assert docker_available(base_url=url) is False
    with pytest.raises(SandboxError, match="--sandbox local") as info:
        DockerProvider(base_url=url)
    assert is_retryable(info.value)
