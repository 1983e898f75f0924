"""Offline, a suite whose images cannot be had fails before anything is built, with one
line per missing image (naming an environment that needs it), never one build at a time."""

from __future__ import annotations

import pytest

from harness.errors import EnvironmentBuildError

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


async def test_every_missing_image_is_named_once_before_any_build(docker_client, tmp_path):
    from docker_helpers import BASE_IMAGE, make_env

    from harness.sandbox.docker import DockerProvider

    for name, base in (("a", "registry.invalid/harness-missing:1"), ("b", BASE_IMAGE)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Dockerfile").write_text(f"FROM {base}\nRUN true\n")
    envs = [
        make_env("pre-a", tmp_path / "a", image={"dockerfile": "Dockerfile"}),
        make_env("pre-a2", tmp_path / "a", image={"dockerfile": "Dockerfile"}),
        make_env("pre-b", tmp_path / "b", image={"dockerfile": "Dockerfile"}),
        make_env("pre-ref", tmp_path / "b", image={"ref": "registry.invalid/harness-other:2"}),
    ]
    provider = DockerProvider()  # pulling allowed: the registry does not exist
    try:
        with pytest.raises(EnvironmentBuildError) as caught:
            await provider.prepare(envs)
    finally:
        await provider.close()
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("2 image(s)"), lines
    assert len(lines) == 3, lines
    assert "'registry.invalid/harness-missing:1' (environment 'pre-a' and 1 more)" in lines[1]
    assert "pulling it failed" in lines[1]
    assert "'registry.invalid/harness-other:2' (environment 'pre-ref')" in lines[2]
    assert not provider._pinned  # nothing was built
