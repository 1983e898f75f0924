"""A running agent's container changes networks between phases (``docker_phase_network``),
against real HTTP servers on Docker's bridge: a task graded in place whose agent has no
network and whose grader may reach host A reaches nothing in the agent's turn, A (and not
B) while graded, and nothing again once grading ends; a multi-step task's steps get host A
only, then host B only. The container is on one policy network at a time."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from docker_helpers import BASE_IMAGE, FIXTURES, http_server, make_env

from harness.errors import SandboxError

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

FETCH = (
    'python3 -c "import sys, urllib.request; '
    'print(urllib.request.urlopen(sys.argv[1], timeout=3).status)" {}'
)


@pytest.fixture
def servers(docker_client, test_label) -> Iterator[dict[str, str]]:
    """Two HTTP servers on Docker's default bridge: name -> (IP address)."""
    made = {}
    try:
        for name in ("A", "B"):
            made[name] = http_server(docker_client, test_label)
        yield {name: box.attrs["NetworkSettings"]["IPAddress"] for name, box in made.items()}
    finally:
        for box in made.values():
            box.remove(force=True)


async def _reaches(sandbox, ip: str, tries: int = 1) -> bool:
    for i in range(tries):
        got = await sandbox.exec(FETCH.format(f"http://{ip}:8000/"), timeout=30)
        if got.ok and "200" in got.stdout:
            return True
        if i + 1 < tries:
            await anyio.sleep(0.5)
    return False


async def _only(sandbox, ips: dict[str, str], name: str) -> bool:
    """The sandbox reaches server ``name`` (within a few tries: the interface may come up a
    moment after the switch) and no other."""
    others = [ip for other, ip in ips.items() if other != name]
    return await _reaches(sandbox, ips[name], tries=6) and not any(
        [await _reaches(sandbox, ip) for ip in others]
    )


def _networks(docker_client, sandbox) -> set[str]:
    attrs = docker_client.api.inspect_container(sandbox.id)
    return set(attrs["NetworkSettings"]["Networks"])


def _env():
    return make_env("test-phasenet", FIXTURES / "rootenv", image={"ref": BASE_IMAGE})


async def test_the_graders_host_is_open_only_while_graded_in_place(
    docker_client, provider, request_for, servers
):
    request = request_for(_env())
    request.in_place = True
    box = await provider.create(request)
    try:
        assert not await _reaches(box, servers["A"]) and not await _reaches(box, servers["B"])
        assert _networks(docker_client, box) == {"none"}
        await box.sweep()
        await box.install_grading(None)
        await box.switch_network([servers["A"]])
        assert await _only(box, servers, "A")  # the grader's host, never another
        (allowlist,) = _networks(docker_client, box)
        assert allowlist.startswith("harness-allow-test-phasenet-")
        await box.end_grading()  # the next step is the agent's: its network again
        assert _networks(docker_client, box) == {"none"}
        assert not await _reaches(box, servers["A"])
        assert box.only_user is not None
    finally:
        await box.destroy()


async def test_each_step_gets_its_own_hosts(docker_client, provider, request_for, servers):
    box = await provider.create(request_for(_env()))
    try:
        await box.switch_network([servers["A"]])
        assert await _only(box, servers, "A")
        await box.switch_network([servers["B"]])
        assert await _only(box, servers, "B")
        assert len(_networks(docker_client, box)) == 1  # one policy's network at a time
        await box.switch_network([])
        assert _networks(docker_client, box) == {"none"}
        assert not any([await _reaches(box, ip) for ip in servers.values()])
    finally:
        await box.destroy()


async def test_a_grading_sandbox_keeps_its_network(provider, request_for):
    request = request_for(_env())
    request.grading = True
    box = await provider.create(request)
    try:
        with pytest.raises(SandboxError, match="keeps its network"):
            await box.switch_network(["10.1.2.3"])
    finally:
        await box.destroy()
