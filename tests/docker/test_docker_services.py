"""Services beside a trial's sandbox, on a real daemon: started fresh per sandbox on a
network of the trial's own (reachable by name, nothing else reachable), healthy before the
agent's container exists, sharing a volume with it, pinned and locked like the main image,
and removed with the sandbox, an unhealthy one included; ``harness gc`` removes those of a
dead owner."""

from __future__ import annotations

import contextlib
import http.server
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker_helpers import BASE_IMAGE, http_server, make_env

from harness.errors import SandboxError
from harness.sandbox.docker_gc import owner_labels

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

SERVER = """
import http.server, os, sys, time
time.sleep(float(os.environ.get("WARMUP", "0")))  # not healthy at once: the agent waits
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = open("/shared/note").read().encode() if self.path == "/note" else b"ok"
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8000), Echo).serve_forever()
"""
FETCH = (
    'python3 -c "import sys, urllib.request; '
    'print(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode())" {}'
)
HEALTH = ["python3", "-c", "import urllib.request as u; u.urlopen('http://localhost:8000/')"]


@contextlib.contextmanager
def _host_server() -> Iterator[int]:
    """An HTTP server on this host, on every address; yields its port."""

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _fetch_from_host(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return reply.read().decode()


def _env(tmp: Path, health: list[str] = HEALTH, warmup: str = "1.5"):
    (tmp / "api").mkdir(exist_ok=True)
    (tmp / "api" / "server.py").write_text(SERVER)
    (tmp / "api" / "Dockerfile").write_text(
        f'FROM {BASE_IMAGE}\nCOPY server.py /srv/server.py\nCMD ["python3", "/srv/server.py"]\n'
    )
    service = {
        "image": {"dockerfile": "Dockerfile"},
        "context": "api",
        "env": {"WARMUP": warmup},
        "volumes": {"notes": "/shared"},
        "healthcheck": {"command": health, "interval_s": 0.5, "retries": 3},
    }
    return make_env(
        f"svc-{tmp.name[-8:].lower()}",
        tmp,
        image={"ref": BASE_IMAGE},
        user="root",
        services={"api": service},
        volumes={"notes": "/notes"},
    )


def _made(client, label: dict[str, str]) -> dict[str, list[str]]:
    """What carries this test's label: containers, networks, volumes."""
    (key, value), = label.items()  # fmt: skip
    flt = {"label": f"{key}={value}"}
    return {
        "containers": [c.name for c in client.containers.list(all=True, filters=flt)],
        "networks": [n.name for n in client.networks.list(filters=flt)],
        "volumes": [v.name for v in client.volumes.list(filters=flt)],
    }


async def test_a_service_is_healthy_reachable_shared_and_gone_with_the_sandbox(
    docker_client, provider, request_for, test_label, tmp_path
):
    env = _env(tmp_path)
    await provider.prepare([env])
    entry = (await provider.lock_entries([env]))[env.name]
    assert entry["services"]["api"]["image_id"].startswith("sha256:")
    box = await provider.create(request_for(env))
    try:
        made = _made(docker_client, test_label)
        assert len(made["containers"]) == 2 and len(made["networks"]) == 1
        assert len(made["volumes"]) == 1
        service = next(c for c in made["containers"] if c.endswith("-api"))
        # Healthy before the agent's container was even created: the first call answers.
        got = await box.exec(FETCH.format("http://api:8000/"), timeout=30)
        assert got.ok and got.stdout.strip() == "ok", got
        # The shared volume: written by the agent's side, read through the service.
        assert (await box.exec("echo from-agent > /notes/note", timeout=30)).ok
        got = await box.exec(FETCH.format("http://api:8000/note"), timeout=30)
        assert got.stdout.strip() == "from-agent", got
        # The trial's network leads nowhere else: no route out.
        out = await box.exec(FETCH.format("http://1.1.1.1/"), timeout=30)
        assert not out.ok
        # Nor to this host itself: a server here on every address answers the host, but not
        # the sandbox at its network's gateway or at Docker's own bridge (before: both 200).
        gateway = docker_client.networks.get(made["networks"][0]).attrs["IPAM"]["Config"][0]
        with _host_server() as port:
            assert _fetch_from_host(f"http://127.0.0.1:{port}/") == "ok"
            for address in (gateway["Gateway"], "172.17.0.1"):
                out = await box.exec(FETCH.format(f"http://{address}:{port}/"), timeout=30)
                assert not out.ok, (address, out)
        health = docker_client.containers.get(service).attrs["State"]["Health"]["Status"]
        assert health == "healthy"
        # Each sandbox has its services fresh: a second one sees no note.
        other = await provider.create(request_for(env))
        try:
            got = await other.exec(FETCH.format("http://api:8000/note"), timeout=30)
            assert not got.ok  # the note file does not exist in the fresh volume
        finally:
            await other.destroy()
    finally:
        await box.destroy()
    assert _made(docker_client, test_label) == {"containers": [], "networks": [], "volumes": []}


async def test_a_switched_network_leaves_the_services_network_alone(
    docker_client, provider, request_for, test_label, tmp_path
):
    """A task graded in place beside its services (``docker_phase_network``): the grader's
    host opens and closes again while the services stay reachable by name throughout."""
    server = http_server(docker_client, test_label)
    try:
        host = f"http://{server.attrs['NetworkSettings']['IPAddress']}:8000/"
        (tmp_path / "phasesw").mkdir()
        request = request_for(_env(tmp_path / "phasesw", warmup="0"))
        request.in_place = True
        box = await provider.create(request)
        try:

            async def reaches(url: str) -> bool:
                got = await box.exec(FETCH.format(url), timeout=30)
                return got.ok

            assert await reaches("http://api:8000/") and not await reaches(host)
            await box.sweep()
            await box.install_grading(None)
            await box.switch_network([host.split("/")[2].split(":")[0]])
            assert await reaches(host) and await reaches("http://api:8000/")
            await box.end_grading()
            assert not await reaches(host) and await reaches("http://api:8000/")
        finally:
            await box.destroy()
    finally:
        server.remove(force=True)


async def test_an_unhealthy_service_fails_the_sandbox_and_leaves_nothing(
    docker_client, provider, request_for, test_label, tmp_path
):
    env = _env(tmp_path, health=["false"], warmup="0")
    with pytest.raises(SandboxError, match="service 'api' .* is unhealthy after 3 failed checks"):
        await provider.create(request_for(env))
    assert _made(docker_client, test_label) == {"containers": [], "networks": [], "volumes": []}


async def test_gc_removes_the_services_of_a_dead_owner(docker_client, test_label, tmp_path):
    import anyio

    from harness.config.models import Limits
    from harness.sandbox import docker_gc
    from harness.sandbox.docker_calls import DaemonCalls
    from harness.sandbox.docker_services import pin_service, service_environment, start_services

    env = _env(tmp_path, warmup="0")
    svc = service_environment(env, "api")
    pinned = {svc.name: pin_service(docker_client, svc, pull=False)}
    # The owner is alive while the services start (a gc run by another test or run meanwhile
    # must leave them alone), and dies before this test's gc.
    import subprocess

    from harness.sandbox.docker_gc import _pid_start

    owner_proc = subprocess.Popen(["sleep", "600"])
    owner = {
        **owner_labels(),
        "harness.pid": str(owner_proc.pid),
        "harness.pid_start": _pid_start(owner_proc.pid) or "1",
    }
    calls = DaemonCalls(4)
    labels = {**test_label, **owner, "harness.run": "gone"}
    try:
        await start_services(calls, docker_client, env, pinned, labels, Limits())
        assert _made(docker_client, test_label)["containers"]
    finally:
        owner_proc.kill()
        owner_proc.wait()
    await anyio.to_thread.run_sync(docker_gc.gc, docker_client)
    assert _made(docker_client, test_label) == {"containers": [], "networks": [], "volumes": []}
