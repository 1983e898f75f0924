"""The bubblewrap sandbox holds against hostile commands: each probe fails inside it, the
host is untouched, nothing keeps running, and `gc` removes a dead run's trial directory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from harness.config.loader import load_suite
from harness.config.models import Limits
from harness.errors import EnvironmentBuildError
from harness.sandbox import trial_dirs
from harness.sandbox.base import SandboxRequest
from harness.sandbox.bwrap import BwrapProvider, bwrap_available
from tests.conftest import REPO

LIMITS = Limits(memory="256m", pids=64)


def require_bwrap() -> None:
    if not bwrap_available():
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but bwrap does not work here", pytrace=False)
        pytest.skip("bubblewrap missing or user namespaces disabled (apt-get install bubblewrap)")


@pytest.fixture
def bwrap_ready() -> None:
    require_bwrap()


def _shell_env():
    resolved = load_suite(REPO / "tasks/shell/suite.yaml")
    return resolved.environments["shell"]


def test_hostile_commands_fail_inside_bwrap(bwrap_ready, tmp_path):
    env = _shell_env()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    secret = tmp_path / "host-secret"
    secret.write_text("do not read")
    marker = Path("/var/tmp") / f"bwrap-escape-{uuid.uuid4().hex}"
    tag = uuid.uuid4().hex

    async def main() -> dict[str, tuple[int, str]]:
        provider = BwrapProvider(limits=LIMITS)
        ids = await provider.prepare([env])
        sandbox = await provider.create(SandboxRequest(env, ids["shell"], limits=LIMITS))
        probes = {
            "kill_all": "kill -9 -1; echo survived",
            "write_outside": f"echo x > {marker} || echo x > /usr/x || echo x > /x",
            "read_host": f"cat {secret}",
            "loopback": f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected",
            "detached": f"(setsid nohup sleep 300 {tag} >/dev/null 2>&1 &); echo started",
            "fork_bomb": "b(){ b|b & }; b; sleep 3; echo bomb-returned",
            "memory_hog": "python3 -c 'x = bytearray(600 * 2**20); print(len(x))'",
            "processes": "ps -e --no-headers | wc -l",
            "whoami": "id -u; cat /proc/self/status | grep CapEff",
        }
        out = {}
        try:
            for name, cmd in probes.items():
                r = await sandbox.exec(cmd, timeout=30)
                out[name] = (r.exit_code, r.stdout + r.stderr)
            out["oom"] = (int(sandbox.oom_killed()), "")
        finally:
            await sandbox.destroy()
        out["root_removed"] = (int(not sandbox.root.exists()), "")
        return out

    out = anyio.run(main)
    listener.close()
    assert "survived" in out["kill_all"][1]  # only its own namespace's processes were there
    assert not marker.exists()
    assert out["write_outside"][0] != 0
    assert "do not read" not in out["read_host"][1] and out["read_host"][0] != 0
    assert "connected" not in out["loopback"][1] and out["loopback"][0] != 0
    assert out["memory_hog"][0] != 0 and "629145600" not in out["memory_hog"][1]
    assert int(out["processes"][1].split()[0]) <= 4  # bwrap init, bash, ps, wc
    assert out["whoami"][1].split()[0] == "1000"
    assert "CapEff:\t0000000000000000" in out["whoami"][1]
    assert out["root_removed"][0] == 1
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert tag not in ps  # the detached sleeper died with its command's namespace


def test_network_allowlists_are_refused(bwrap_ready):
    env = _shell_env()
    provider = BwrapProvider(limits=LIMITS)

    async def main() -> None:
        await provider.prepare_networks([(env, ["example.com"])])

    with pytest.raises(EnvironmentBuildError, match="cannot honour an allowlist"):
        anyio.run(main)


def test_gc_removes_trial_dirs_of_dead_runs(tmp_path):
    code = (
        "from harness.sandbox import trial_dirs; "
        f"print(trial_dirs.make_trial_dir('harness-bwrap', {str(tmp_path)!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    dead = Path(done.stdout.strip())
    alive = trial_dirs.make_trial_dir("harness-bwrap", str(tmp_path))
    other = tmp_path / "not-ours"
    other.mkdir()
    assert trial_dirs.leftovers(str(tmp_path)) == [dead]
    assert trial_dirs.gc(str(tmp_path)) == [dead]
    assert not dead.exists() and alive.exists() and other.exists()


def test_gc_leaves_other_users_trial_dirs(tmp_path):
    """A shared temporary folder: another user's dead run's directory is theirs to collect."""
    if os.getuid() != 0:
        pytest.skip("needs root to make a directory another user owns")
    code = (
        "from harness.sandbox import trial_dirs; "
        f"print(trial_dirs.make_trial_dir('harness-trial', {str(tmp_path)!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    theirs = Path(done.stdout.strip())
    os.chown(theirs, 4242, 4242)
    assert trial_dirs.leftovers(str(tmp_path)) == [] and trial_dirs.gc(str(tmp_path)) == []
    assert theirs.exists()
    os.chown(theirs, os.getuid(), os.getgid())
    assert trial_dirs.gc(str(tmp_path)) == [theirs]  # the same directory, when it is ours


def test_no_command_reads_the_harness_environment(bwrap_ready, canary, monkeypatch):
    """bwrap's own process is PID 1 of the sandbox and its environ is readable there: it
    must start from a clean environment, not the harness's (API keys included)."""
    canary.install(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-harness-only-key-7d1f")
    env = _shell_env()

    async def main() -> str:
        provider = BwrapProvider(limits=LIMITS)
        ids = await provider.prepare([env])
        sandbox = await provider.create(SandboxRequest(env, ids["shell"], limits=LIMITS))
        try:
            dump = (
                "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done"
            )
            r = await sandbox.exec(f"env; {dump}; cat /proc/1/environ", timeout=30)
            assert r.ok, r
            return r.stdout
        finally:
            await sandbox.destroy()

    out = anyio.run(main)
    assert "PATH=" in out  # the dump did read PID 1's environment
    canary.assert_absent(out)
    assert "sk-harness-only-key-7d1f" not in out
