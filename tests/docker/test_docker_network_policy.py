"""The network policies on real Docker networks, against real HTTP servers: open egress
reaches a server outside the container (one on this host) while two open sandboxes cannot
reach each other; a grading sandbox gets no network, not even its environment's hosts,
unless its request names hosts, and then reaches exactly those; only a grading sandbox
asked for a root grader (``grading.root``) keeps the root capabilities test tools need."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import anyio
import pytest

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

FETCH = (
    'python3 -c "import sys, urllib.request; '
    'print(urllib.request.urlopen(sys.argv[1], timeout=3).status)" {}'
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def host_server() -> Iterator[int]:
    """An HTTP server on this host, on every address: its port."""
    server = ThreadingHTTPServer(("0.0.0.0", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


async def _reaches(sandbox, url: str, tries: int = 1) -> bool:
    for i in range(tries):
        got = await sandbox.exec(FETCH.format(url), timeout=30)
        if got.ok and "200" in got.stdout:
            return True
        if i + 1 < tries:
            await anyio.sleep(0.5)
    return False


async def test_open_egress_reaches_outside_and_never_another_sandbox(
    docker_client, request_for, root_env, host_server
):
    from harness.sandbox.docker import DockerProvider

    provider = DockerProvider()
    try:
        opened = request_for(root_env)
        opened.internet = True
        first = await provider.create(opened)
        second = await provider.create(opened)
        closed = await provider.create(request_for(root_env))
        assert provider._open is not None
        net = docker_client.networks.get(provider._open.network_name)
        gateway = net.attrs["IPAM"]["Config"][0]["Gateway"]
        outside = f"http://{gateway}:{host_server}/"
        assert await _reaches(first, outside, tries=5)
        assert not await _reaches(closed, outside)
        # The first sandbox serves; the second, on the same open bridge, cannot reach it.
        await first.exec("nohup python3 -m http.server 8000 >/dev/null 2>&1 &", timeout=30)
        first_ip = docker_client.containers.get(first.id).attrs["NetworkSettings"]["Networks"][
            net.name
        ]["IPAddress"]
        assert await _reaches(first, "http://127.0.0.1:8000/", tries=20)
        assert not await _reaches(second, f"http://{first_ip}:8000/")
        name = net.name
        for box in (first, second, closed):
            await box.destroy()
    finally:
        await provider.close()
    assert not docker_client.networks.list(names=[name])  # removed with the provider


async def test_grading_sandbox_gets_only_the_hosts_its_request_names(
    docker_client, request_for, test_label
):
    from docker_helpers import BASE_IMAGE, FIXTURES, http_server, make_env

    from harness.sandbox.docker import DockerProvider

    server = http_server(docker_client, test_label)
    provider = DockerProvider()
    try:
        url = f"http://{server.attrs['NetworkSettings']['IPAddress']}:8000/"
        ip = url.split("/")[2].split(":")[0]
        env = make_env(
            "test-gradenet", FIXTURES / "rootenv", image={"ref": BASE_IMAGE}, network=[ip]
        )
        agent = await provider.create(request_for(env))
        assert await _reaches(agent, url, tries=20)  # the environment's host, the agent's
        grading = request_for(env)
        grading.grading = True
        grader = await provider.create(grading)
        assert not await _reaches(grader, url)  # never the agent's hosts
        allowed = request_for(env)
        allowed.grading, allowed.network = True, [ip]
        grader_with_hosts = await provider.create(allowed)
        assert await _reaches(grader_with_hosts, url, tries=5)
        for box in (agent, grader, grader_with_hosts):
            await box.destroy()
    finally:
        await provider.close()
        server.remove(force=True)


async def test_an_allowlist_never_reaches_this_hosts_own_services(
    docker_client, request_for, host_server
):
    """Traffic to the host itself is never forwarded (``DOCKER-USER`` never sees it): the
    allowlist's rules in ``INPUT`` keep a sandbox allowed one host off every service of this
    host (its bridge's gateway, docker0's address), unless the allowlist names the host."""
    import ipaddress

    from docker_helpers import BASE_IMAGE, FIXTURES, make_env

    from harness.sandbox.docker import DockerProvider

    subnet = docker_client.networks.get("bridge").attrs["IPAM"]["Config"][0]["Subnet"]
    docker0 = str(next(ipaddress.ip_network(subnet).hosts()))  # this host on Docker's bridge
    provider = DockerProvider()
    try:
        other = make_env("test-hostoff", FIXTURES / "rootenv", image={"ref": BASE_IMAGE})
        elsewhere = request_for(other)
        elsewhere.network = ["10.255.0.1"]
        box = await provider.create(elsewhere)
        (allow,) = provider._allowlists.values()
        gateway = docker_client.networks.get(allow.network_name).attrs["IPAM"]["Config"][0]
        for ip in (gateway["Gateway"], docker0):
            assert not await _reaches(box, f"http://{ip}:{host_server}/"), ip
        named = request_for(other)
        named.network = [docker0]
        allowed = await provider.create(named)
        bridges = [a.bridge for a in provider._allowlists.values()]
        assert await _reaches(allowed, f"http://{docker0}:{host_server}/", tries=5)
        for made in (box, allowed):
            await made.destroy()
    finally:
        await provider.close()
    rules = subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True).stdout
    assert len(bridges) == 2 and not any(b in rules for b in bridges), rules  # removed on close


async def test_only_a_root_grader_keeps_roots_capabilities(request_for, root_env):
    """``chown`` needs CAP_CHOWN: Docker's default root has it, the hardened one does not."""
    from harness.sandbox.docker import DockerProvider

    provider = DockerProvider()
    try:
        made = {}
        for name, grading, root in (("agent", False, True), ("grader", True, False)):
            request = request_for(root_env)
            request.grading, request.grader_root = grading, root
            made[name] = await provider.create(request)
        rooted = request_for(root_env)
        rooted.grading, rooted.grader_root = True, True
        made["root grader"] = await provider.create(rooted)
        chown = "touch /tmp/f && chown 1000:1000 /tmp/f && echo done"
        got = {name: await box.exec(chown, timeout=30, user="root") for name, box in made.items()}
        assert got["root grader"].ok and "done" in got["root grader"].stdout, got["root grader"]
        assert not got["grader"].ok  # the default grading sandbox: only SETUID/SETGID
        assert not got["agent"].ok  # grader_root means nothing outside a grading sandbox
        for box in made.values():
            await box.destroy()
    finally:
        await provider.close()
