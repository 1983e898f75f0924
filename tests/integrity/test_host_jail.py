"""A ``where: host`` program cannot reach the harness: not its environment (the real API key,
the canary), not its processes, not its files, not the Docker socket; it still reaches the
metering proxy and writes its answer, from a real jail (bubblewrap) on this machine."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harness.agents.command import CommandAgent
from harness.errors import AgentFailure
from tests.fakes.openai_server import FakeOpenAI, completion
from tests.integrity.canary import CANARY_VAR
from tests.integrity.test_bwrap_sandbox import require_bwrap
from tests.models.conftest import API_KEY, KEY_ENV, kv_environment, make_ctx

PROBE = r"""
import glob, json, os, sys, urllib.request
found = set()  # the harness's secrets, wherever a process shows them
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        entries = open(path, "rb").read().decode(errors="replace").split("\0")
    except OSError:
        continue
    found.update(e for e in entries if e.startswith(tuple(sys.argv[3:])) and e not in sys.argv)
harness = int(sys.argv[1])
try:
    os.kill(harness, 0)
    reach = "signalled the harness"
except OSError:
    reach = "no harness"
try:
    open(sys.argv[2], "a").write("tampered")
    wrote = "wrote outside"
except OSError:
    wrote = "read-only"
docker = "docker socket" if os.path.exists("/var/run/docker.sock") else "no docker socket"
req = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": []}).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "Content-Type": "application/json"})
reply = json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]
print("\n".join(sorted(found)))
print(reach, wrote, docker, len(glob.glob("/proc/[0-9]*")), "processes")
open(os.environ["HARNESS_ANSWER_FILE"], "w").write(reply)
"""


@pytest.fixture
def jail_ready() -> None:
    require_bwrap()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_host_program_cannot_reach_the_harness(
    jail_ready, canary, monkeypatch, tmp_path, anyio_backend
) -> None:
    from harness.config.models import ModelSettings
    from harness.sandbox.base import SandboxRequest
    from harness.sandbox.local import LocalProvider

    canary.install(monkeypatch)
    monkeypatch.setenv(KEY_ENV, API_KEY)
    # /proc/<pid>/environ shows a process's environment as it was started: a process started
    # with the canary and the key stands for the harness as a user launches it
    started = {**os.environ, **canary.env, KEY_ENV: API_KEY}
    harness = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=started)
    victim = tmp_path / "harness-file.txt"
    victim.write_text("original")
    box = await LocalProvider().create(SandboxRequest(environment=kv_environment(), image_id=None))
    try:
        with FakeOpenAI() as server:
            server.push(completion("the answer"))
            model = ModelSettings(name="fake-model", base_url=server.base_url, api_key_env=KEY_ENV)
            names = f"{CANARY_VAR}= {KEY_ENV}="
            args = f"{harness.pid} {shlex.quote(str(victim))} {names}"
            command = f"{shlex.quote(sys.executable)} -c {shlex.quote(PROBE)} {args}"
            ctx = make_ctx(
                box, agent="command", model=model, params={"command": command, "where": "host"}
            )
            result = await CommandAgent().run(ctx)
            assert server.model_requests()[0].headers["authorization"] == f"Bearer {API_KEY}"
    finally:
        harness.kill()
        harness.wait()
        await box.destroy()
    out = next(e.content for e in ctx.trajectory.events if e.kind == "command")
    assert result.answer == "the answer"  # the proxy and the answer file still work
    canary.assert_absent(out, result.answer)
    assert API_KEY not in out
    assert "no harness read-only no docker socket" in out
    assert int(out.rsplit(" processes", 1)[0].split()[-1]) <= 3  # bwrap's init, bash, python
    assert victim.read_text() == "original"


def test_without_a_jail_host_programs_are_refused(monkeypatch) -> None:
    from harness.agents import host_jail

    monkeypatch.setattr(host_jail, "available", lambda: False)
    with pytest.raises(Exception, match="bubblewrap jail") as info:
        host_jail.require("arms.a.params.where")
    assert not isinstance(info.value, AgentFailure)  # a configuration error, exit 2


def test_preflight_refuses_a_host_program_without_a_jail(tmp_path: Path) -> None:
    """Through ``harness run``: exit 2 naming the arm's where, before any run row."""
    import yaml

    from tests.conftest import run_cli

    task = {"id": "q", "instruction": "x", "graders": [{"type": "answer_match", "expected": "x"}]}
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}))
    arm = {"name": "prog", "agent": "command", "params": {"command": "echo x", "where": "host"}}
    suite = {"name": "s", "tasks": ["tasks.yaml"], "arms": [arm]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    # a PATH without bwrap: the jail cannot be built
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bash", "sh"):
        (bare / tool).symlink_to(f"/bin/{tool}")
    result = run_cli(
        "run",
        str(tmp_path / "suite.yaml"),
        "--store",
        f"sqlite:///{tmp_path}/s.db",
        env={"PATH": str(bare)},
    )
    assert result.returncode == 2, result.stderr
    assert "arms.0.params.where" in result.stderr or "params.where" in result.stderr
    assert "bubblewrap jail" in result.stderr
    assert not (tmp_path / "s.db").exists()
