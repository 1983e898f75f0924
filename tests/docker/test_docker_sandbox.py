"""The Docker sandbox: fresh state, isolation, limits, hardening, files and state snapshots."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness.config.models import Limits
from harness.errors import AgentFailure, SandboxError
from harness.sandbox.base import network_hosts, snapshot_state

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


async def test_a_new_sandbox_sees_nothing_of_the_previous_trial(provider, root_env, request_for):
    a = await provider.create(request_for(root_env))
    try:
        r = await a.exec(
            "echo leak > /work/marker && rm -f /etc/os-release /etc/issue && "
            "(nohup sleep 1000 >/dev/null 2>&1 &) && (nohup sleep 1001 >/dev/null 2>&1 &) && "
            "test ! -e /etc/os-release && pgrep -c -f 'sleep 100[01]'"
        )
        assert r.ok and r.stdout.strip() == "2", r
        b = await provider.create(request_for(root_env))  # while `a` is still alive
        try:
            r = await b.exec(
                "test ! -e /work/marker && test -s /etc/os-release && test -e /etc/issue "
                "&& ! pgrep -f 'sleep 100[01]' && cat /work/data.txt"
            )
            assert r.ok, r
            assert r.stdout == "seed data\n"
        finally:
            await b.destroy()
    finally:
        await a.destroy()


async def test_no_network_and_no_host_environment(provider, root_env, request_for, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-host-secret-123")
    monkeypatch.setenv("HARNESS_TEST_HOST_ONLY", "host-value")
    s = await provider.create(request_for(root_env))
    try:
        r = await s.exec("env")
        assert r.ok
        assert "sk-fake-host-secret-123" not in r.stdout
        assert "OPENAI_API_KEY" not in r.stdout and "HARNESS_TEST_HOST_ONLY" not in r.stdout
        r = await s.exec("ls /sys/class/net")
        assert r.stdout.split() == ["lo"]
        r = await s.exec(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"",
            timeout=20,
        )
        assert r.exit_code != 0 and "unreachable" in r.stderr.lower(), r
        r = await s.exec("getent hosts harness-dns-probe.invalid", timeout=20)  # never a host
        assert r.exit_code != 0
    finally:
        await s.destroy()


async def test_host_docker_proxy_config_is_not_injected(
    docker_client, root_env, request_for, monkeypatch, tmp_path: Path
):
    from harness.sandbox.docker import DockerProvider

    (tmp_path / "config.json").write_text(
        '{"proxies": {"default": {"httpProxy": "http://host-proxy-leak:3128"}}}'
    )
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    p = DockerProvider()
    try:
        s = await p.create(request_for(root_env))
        r = await s.exec("env")
        assert "host-proxy-leak" not in r.stdout, r.stdout
        await s.destroy()
    finally:
        await p.close()


async def test_declared_network_hosts_are_the_only_reachable_ones(
    docker_client, request_for, test_label
):
    """Egress allowlist: two web servers (our own containers on this machine); the sandbox's
    environment lists only the first; the second is unreachable unless the task lists it too;
    rules go with the provider."""
    import subprocess

    from docker_helpers import BASE_IMAGE, FIXTURES, http_server, make_env

    from harness.sandbox.docker import DockerProvider

    servers = [http_server(docker_client, test_label) for _ in range(2)]
    provider = DockerProvider()
    try:
        ips = [c.attrs["NetworkSettings"]["IPAddress"] for c in servers]
        env = make_env(
            "test-allow", FIXTURES / "rootenv", image={"ref": BASE_IMAGE}, network=[ips[0]]
        )
        s = await provider.create(request_for(env))
        fetch = (
            'python3 -c "import sys, urllib.request; '
            'print(urllib.request.urlopen(sys.argv[1], timeout=3).status)" http://{}:8000/'
        )
        try:
            allowed = await s.exec(fetch.format(ips[0]), timeout=30)
            for _ in range(20):  # the server may still be starting
                if allowed.ok:
                    break
                await anyio.sleep(0.5)
                allowed = await s.exec(fetch.format(ips[0]), timeout=30)
            assert allowed.ok and "200" in allowed.stdout, allowed.stderr
            blocked = await s.exec(fetch.format(ips[1]), timeout=30)
            assert not blocked.ok
        finally:
            await s.destroy()
        # A task that lists the second server itself reaches both, on a network of its own.
        task_request = request_for(env)
        task_request.network = network_hosts(env, [ips[1]])
        t = await provider.create(task_request)
        try:
            for ip in ips:
                reached = await t.exec(fetch.format(ip), timeout=30)
                assert reached.ok and "200" in reached.stdout, (ip, reached.stderr)
        finally:
            await t.destroy()
        assert len(provider._allowlists) == 2
        bridge = provider._allowlists[("test-allow", (f"{ips[0]}",))].bridge
        assert (
            bridge
            in subprocess.run(
                ["iptables", "-S", "DOCKER-USER"], capture_output=True, text=True
            ).stdout
        )
    finally:
        await provider.close()
        for c in servers:
            c.remove(force=True)
    rules = subprocess.run(["iptables", "-S", "DOCKER-USER"], capture_output=True, text=True)
    assert bridge not in rules.stdout  # rules removed with the provider
    assert not docker_client.networks.list(names=[f"harness-allow-test-allow-{bridge[2:]}"])


async def test_fork_bomb_and_memory_hog_fail_only_their_command(provider, root_env, request_for):
    limits = Limits(memory="128m", pids=64, cpus=1)
    bystander = await provider.create(request_for(root_env))
    victim = await provider.create(request_for(root_env, limits=limits))
    try:
        async with anyio.create_task_group() as tg:
            results = {}

            async def bomb():
                results["bomb"] = await victim.exec(":(){ :|:& };: ; wait; sleep 30", timeout=8)

            tg.start_soon(bomb)
            await anyio.sleep(2)
            results["bystander"] = await bystander.exec("echo fine")
        assert results["bystander"].ok and results["bystander"].stdout == "fine\n"
        assert not results["bomb"].ok and results["bomb"].exit_code != 0
        # The limit held: the bomb never got more PIDs than allowed.
        inspect = await provider._run("inspect", provider._client.api.inspect_container, victim.id)
        assert inspect["HostConfig"]["PidsLimit"] == 64

        r = await victim.exec("python3 -c \"x = b'x' * (512 << 20); print(len(x))\"", timeout=60)
        assert r.exit_code == 137 and not r.timed_out, r  # OOM-killed, not a timeout
        assert (await bystander.exec("python3 -c 'print(1)'")).ok
    finally:
        await victim.destroy()
        await bystander.destroy()
    fresh = await provider.create(request_for(root_env, limits=limits))
    try:
        r = await fresh.exec("echo ok; test $(ps -e --no-headers | wc -l) -lt 10")
        assert r.ok and r.stdout.startswith("ok\n")
    finally:
        await fresh.destroy()


async def test_hidden_material_enters_only_with_copy_in(
    provider, agent_env, request_for, tmp_path: Path
):
    hidden = tmp_path / "hidden"
    (hidden / "nested").mkdir(parents=True)
    (hidden / "test_secret.py").write_text("def test_ok():\n    assert True\n")
    (hidden / "nested" / "expected.json").write_text('{"a": 1}')
    s = await provider.create(request_for(agent_env))
    try:
        r = await s.exec("ls -A /work; test ! -e /work/.hidden_tests")
        assert r.ok, r
        assert r.stdout.split() == ["hello.txt"]
        await s.copy_in(hidden, ".hidden_tests")
        r = await s.exec("find .hidden_tests -type f | sort; stat -c %U .hidden_tests/nested")
        assert r.stdout.split() == [
            ".hidden_tests/nested/expected.json",
            ".hidden_tests/test_secret.py",
            "agent",
        ]
        assert await s.read_file(".hidden_tests/nested/expected.json") == b'{"a": 1}'
    finally:
        await s.destroy()


async def test_hardening_caps_nonewprivs_user_and_no_mounts(
    provider, agent_env, root_env, request_for
):
    s = await provider.create(request_for(agent_env))
    try:
        r = await s.exec(
            "id -un; id -u; grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs)' /proc/self/status"
        )
        lines = r.stdout.split("\n")
        assert lines[0] == "agent" and lines[1] == "1000"
        status = dict(line.split(":\t") for line in lines[2:] if line)
        assert status == {
            "CapPrm": "0000000000000000",
            "CapEff": "0000000000000000",
            "CapBnd": "0000000000000000",
            "NoNewPrivs": "1",
        }
        with pytest.raises(AgentFailure, match="run as agent"):  # agents stay unprivileged
            await s.exec("id -u", user="root")
        r = await s.exec("cat /proc/1/cmdline | tr '\\0' ' '")
        assert "init" in r.stdout and "sleep infinity" in r.stdout
        info = await provider._run("inspect", provider._client.api.inspect_container, s.id)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges"]
        assert host["Privileged"] is False
        # The only host mounts: the trial's disk quota, one tmpfs directory of its own whose
        # subdirectories are bound over the image's writable places.
        sources = {m["Source"].rsplit("/", 1)[0] for m in info["Mounts"]}
        assert len(sources) == 1 and "/harness-quota-" in sources.pop()
        assert {m["Destination"] for m in info["Mounts"]} >= {"/work", "/tmp", "/var/tmp"}
        assert all(m["Type"] == "bind" for m in info["Mounts"])
        assert host["Init"] is True
        assert info["Config"]["User"] == "agent"
        assert info["Config"]["Labels"]["harness"] == "1"
        assert info["Config"]["Labels"]["harness.run"] == "test-run"
    finally:
        await s.destroy()
    s = await provider.create(request_for(root_env))  # `user: root` opts in
    try:
        assert (await s.exec("id -u")).stdout.strip() == "0"
        # Root without capabilities still cannot do privileged things.
        r = await s.exec("chown agent /etc/hostname || mount -t tmpfs x /mnt")
        assert r.exit_code != 0
    finally:
        await s.destroy()


async def test_exec_semantics(provider, agent_env, request_for):
    s = await provider.create(request_for(agent_env))
    try:
        r = await s.exec("echo out; echo err >&2; exit 3")
        assert (r.exit_code, r.stdout, r.stderr, r.ok) == (3, "out\n", "err\n", False)
        r = await s.exec("pwd; echo $FOO", env={"FOO": "bar"})
        assert r.stdout == "/work\nbar\n"
        r = await s.exec("cat; env | grep -c HARNESS_STDIN || true", stdin='{"x": 1}')
        assert r.stdout == '{"x": 1}0\n'
        big = b"\x00\xff" * 100_000  # over the env-var path: goes through a file
        r = await s.exec("wc -c; ls -A /tmp", stdin=big)
        assert r.stdout.split() == ["200000"], r
        r = await s.exec("sleep 20", timeout=1)
        assert r.timed_out and not r.ok and r.duration_s < 10
        r = await s.exec("(sleep 60 &) ; sleep 30", timeout=1)
        assert r.timed_out and r.duration_s < 10
        await s.write_file("deep/new/file.bin", b"\x01\x02")
        assert await s.read_file("/work/deep/new/file.bin") == b"\x01\x02"
        assert (await s.exec("stat -c %U deep/new deep/new/file.bin")).stdout.split() == [
            "agent",
            "agent",
        ]
        with pytest.raises(FileNotFoundError):
            await s.read_file("missing.txt")
    finally:
        await s.destroy()
    with pytest.raises(SandboxError):
        await s.exec("true")
    with pytest.raises(SandboxError):
        await s.read_file("hello.txt")


async def test_snapshot_state_of_files(provider, agent_env, request_for):
    s = await provider.create(request_for(agent_env))
    try:
        s0 = await snapshot_state(s, agent_env)
        assert set(s0["files"]) == {"/work", "/work/hello.txt"}
        await s.exec("echo changed > hello.txt && mkdir d && touch d/new")
        s1 = await snapshot_state(s, agent_env)
        assert s1["files"]["/work/hello.txt"]["sha256"] != s0["files"]["/work/hello.txt"]["sha256"]
        assert {"/work/d", "/work/d/new"} <= set(s1["files"])
    finally:
        await s.destroy()


async def test_container_killed_by_the_platform_is_a_sandbox_error(
    provider, root_env, request_for, docker_client
):
    s = await provider.create(request_for(root_env))
    docker_client.api.kill(s.id)
    with pytest.raises(SandboxError):
        await s.exec("true")
    await s.destroy()


async def test_container_killed_during_exec_is_a_sandbox_error_not_an_exit_code(
    provider, root_env, request_for, docker_client
):
    """A daemon shutting down kills containers under running commands: that is
    infrastructure (retried), not a setup failure or an agent's non-zero exit."""
    s = await provider.create(request_for(root_env))
    try:
        async with anyio.create_task_group() as tg:

            async def kill_soon() -> None:
                await anyio.sleep(1.0)
                await anyio.to_thread.run_sync(docker_client.api.kill, s.id)

            tg.start_soon(kill_soon)
            with pytest.raises(SandboxError, match="died during exec"):
                await s.exec("sleep 30", timeout=60)
    finally:
        await s.destroy()


async def test_garbled_exec_output_is_a_sandbox_error(provider, root_env, request_for, monkeypatch):
    """docker-py can misread exec output under load ("48 is not a valid stream"): the
    command ran but its output is lost, so the trial is infrastructure's failure (retried
    whole, in a fresh container), never a harness error or the agent's failure."""
    s = await provider.create(request_for(root_env))
    try:
        api = provider._client.api
        real = api.exec_start

        def garbled(exec_id, **kwargs):
            real(exec_id, **kwargs)  # the command really runs
            raise ValueError("48 is not a valid stream")

        monkeypatch.setattr(api, "exec_start", garbled)
        with pytest.raises(SandboxError, match="reading exec output failed"):
            await s.exec("echo ran > /work/ran")
        monkeypatch.setattr(api, "exec_start", real)
        # the command was started, not waited for: give it a moment on a loaded host
        seen = await s.exec(
            "for i in $(seq 100); do [ -s /work/ran ] && break; sleep 0.1; done; cat /work/ran"
        )
        assert seen.stdout == "ran\n", seen
    finally:
        await s.destroy()


async def test_the_harnesss_own_kill_is_never_evidence_of_an_outside_fault(
    provider, root_env, request_for, docker_client
):
    """The agent moves ``sleep`` (the init's child) away; the harness's restart after a
    failed sweep (its own kill) then leaves an init that exits at once. That death is the
    agent's doing. A kill from outside stays infrastructure (None)."""
    s = await provider.create(request_for(root_env))
    try:
        r = await s.exec('mv "$(command -v sleep)" /tmp/sleep.moved', user="0:0")
        assert r.ok, r
        await s.restart()
        with pytest.raises(SandboxError):
            await s.exec("true")
        cause = await s.death_cause()
        assert cause is not None and cause.startswith("killed_own_sandbox:"), cause
    finally:
        await s.destroy()
    outside = await provider.create(request_for(root_env))
    try:
        await anyio.to_thread.run_sync(docker_client.api.kill, outside.id)
        with pytest.raises(SandboxError):
            await outside.exec("true")
        assert await outside.death_cause() is None
    finally:
        await outside.destroy()
