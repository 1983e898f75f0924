"""The tool server: one process per trial answering JSON-lines requests; state kept in
memory between calls; a crash or a hang is reported, never hangs the trial."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from harness.config.models import Environment, EnvironmentSpec, ToolServerSpec
from harness.sandbox.base import SandboxRequest
from harness.sandbox.local import LocalProvider
from harness.tools.client import ToolServer, ToolServerDied
from harness.tools.server import handle

SERVER = Path(__file__).resolve().parents[2] / "harness" / "tools" / "server.py"
PROGRAM = """
import sys, time
from tool_server import serve
state = {"n": 0}
def add(args):
    state["n"] += args["k"]
    print("noise on stdout goes to stderr")
    return str(state["n"])
def crash(args):
    sys.exit(3)
def hang(args):
    time.sleep(60)
serve({"add": add, "crash": crash, "hang": hang}, lambda: state)
"""


def test_handle_answers_every_line() -> None:
    tools = {"echo": lambda a: a["x"]}
    assert handle('{"id": 1, "op": "call", "tool": "echo", "args": {"x": "hi"}}', tools, dict) == {
        "id": 1,
        "ok": True,
        "output": "hi",
    }
    assert handle('{"id": 2, "op": "call", "tool": "echo", "args": {}}', tools, dict)["output"] == (
        "Error: 'x'"
    )
    assert handle("not json", tools, dict)["id"] is None
    assert handle('{"id": 3, "op": "call", "tool": "nope"}', tools, dict)["ok"] is False
    assert handle('{"id": 4, "op": "snapshot"}', tools, lambda: {"a": 1})["state"] == {"a": 1}


@pytest.fixture
def env(tmp_path: Path) -> Environment:
    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(SERVER, files / "tool_server.py")
    (files / "prog.py").write_text(PROGRAM)
    spec = EnvironmentSpec(
        name="t",
        files="files",
        tool_server=ToolServerSpec(command="python3 -S prog.py", startup_timeout_s=30),
    )
    return Environment(spec, tmp_path)


def test_state_lives_in_the_server_until_it_dies(env: Environment) -> None:
    async def go() -> None:
        sandbox = await LocalProvider().create(SandboxRequest(environment=env, image_id=None))
        try:
            server = await ToolServer.start(sandbox, env.spec.tool_server)
            assert server is not None and server.tools == ["add", "crash", "hang"]
            assert await server.call("add", {"k": 2}, 5) == (True, "2")
            assert await server.call("add", {"k": 3}, 5) == (True, "5")
            assert await server.snapshot() == {"n": 5}
            ok, out = await server.call("hang", {}, 0.5)
            assert not ok and "timed out" in out
            ok, out = await server.call("add", {"k": 1}, 5)  # killed after the hang
            assert not ok and "tool_server_died" in out
            with pytest.raises(ToolServerDied):
                await server.snapshot()
            await server.close()

            server = await ToolServer.start(sandbox, env.spec.tool_server)
            assert server is not None
            ok, out = await server.call("crash", {}, 5)
            assert not ok and "exited" in out
            await server.close()
        finally:
            await sandbox.destroy()

    anyio.run(go)


def test_open_process_is_a_declared_capability(env: Environment) -> None:
    """The faulty backend forwards ``open_process`` to the backend it wraps (it used to drop
    it, so tool servers never ran under fault injection); a sandbox without the capability
    answers the base class's None and gets no server."""
    from harness.sandbox.base import Sandbox
    from harness.sandbox.faulty import FaultySandbox
    from harness.trial_steps import NoSandbox

    assert "open_process" not in vars(NoSandbox)  # inherits the declared default

    async def go() -> None:
        inner = await LocalProvider().create(SandboxRequest(environment=env, image_id=None))
        sandbox = FaultySandbox(inner, kill_at=None)
        try:
            server = await ToolServer.start(sandbox, env.spec.tool_server)
            assert server is not None and server.tools == ["add", "crash", "hang"]
            assert await server.call("add", {"k": 2}, 5) == (True, "2")
            await server.close()
            assert await Sandbox.open_process(sandbox, "true", stderr=None) is None
        finally:
            await sandbox.destroy()

    anyio.run(go)
