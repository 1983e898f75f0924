"""A bwrap launch that fails before the command runs is the machinery's fault (relaunched, then
an infrastructure error), decided by evidence the command cannot forge: a byte the sandbox
writes just before the command starts. A command that prints bwrap's own error text, or whose
sibling forks the trial to its pid limit, fails as the agent's failure."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

import anyio
import pytest

from harness.agents import host_jail
from harness.agents.command import CommandAgent
from harness.config.models import Limits
from harness.errors import AgentFailure, SandboxError, classify
from harness.sandbox.base import SandboxRequest
from harness.sandbox.bwrap import BwrapProvider
from harness.sandbox.launch_marker import LAUNCHES
from tests.integrity.test_bwrap_sandbox import _shell_env, require_bwrap

MOUNT_ERROR = (
    "bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to remount recursively with correct "
    'flags "/newroot/var/lib/docker/overlay2/0123/merged/home/agent": Invalid argument'
)


@pytest.fixture
def flaky_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``bwrap`` first on PATH that fails the way a host mount changing under it does, as
    many times as ``fails`` says, then runs the real one. Returns the ``fails`` file."""
    require_bwrap()
    real = next(
        p / "bwrap"
        for p in map(Path, os.environ["PATH"].split(os.pathsep))
        if (p / "bwrap").exists()
    )
    fails = tmp_path / "fails"
    fails.write_text("0")
    shim = tmp_path / "bin" / "bwrap"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/bash\n"
        f'n=$(cat {fails}); if [ "$n" -gt 0 ]; then echo $((n-1)) > {fails}; '
        f"echo {shlex.quote(MOUNT_ERROR)} >&2; exit 1; fi\n"
        f'exec {real} "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    return fails


async def _sandbox(limits: Limits | None = None):  # type: ignore[no-untyped-def]
    env = _shell_env()
    provider = BwrapProvider(limits=limits or Limits(memory="256m", pids=64))
    ids = await provider.prepare([env])
    return await provider.create(SandboxRequest(env, ids["shell"], limits=provider.limits))


def test_a_launch_that_fails_once_is_launched_again(flaky_bwrap: Path) -> None:
    async def main() -> tuple[int, str]:
        box = await _sandbox()
        try:
            flaky_bwrap.write_text(str(LAUNCHES - 1))
            done = await box.exec("echo ran; exit 3")
            return done.exit_code, done.stdout
        finally:
            await box.destroy()

    assert anyio.run(main) == (3, "ran\n")  # the command's own exit, from the last launch
    assert flaky_bwrap.read_text().strip() == "0"


def test_a_launch_that_never_starts_is_an_infrastructure_error(flaky_bwrap: Path) -> None:
    async def main() -> None:
        box = await _sandbox()
        try:
            flaky_bwrap.write_text(str(LAUNCHES))
            await box.exec("echo ran")
        finally:
            await box.destroy()

    with pytest.raises(SandboxError, match="Invalid argument") as info:
        anyio.run(main)
    assert classify(info.value) == "infra_error"


def test_bwraps_error_text_printed_by_the_command_is_the_commands_failure() -> None:
    require_bwrap()

    async def main() -> tuple[int, str]:
        box = await _sandbox()
        try:
            done = await box.exec(f"echo {shlex.quote(MOUNT_ERROR)} >&2; exit 1")
            return done.exit_code, done.stderr
        finally:
            await box.destroy()

    code, stderr = anyio.run(main)
    assert code == 1 and stderr.startswith("bwrap: Can't bind mount")


def test_a_launch_failed_by_the_trials_own_fork_bomb_is_the_trials_failure() -> None:
    """Another command of the trial holds every pid of its limit while this one launches:
    bwrap cannot create its namespace, the kernel counted the limit, and the failure is the
    trial's (an agent cannot turn its failures into retries this way)."""
    require_bwrap()

    async def main() -> tuple[int, str]:
        box = await _sandbox(Limits(memory="256m", pids=24))
        try:
            async with anyio.create_task_group() as tg:
                bomb = "for i in $(seq 200); do sleep 4 & done 2>/dev/null; wait"
                tg.start_soon(lambda: box.exec(bomb, timeout=20))
                await anyio.sleep(1.5)
                done = await box.exec("echo ran")
                tg.cancel_scope.cancel()
            return done.exit_code, done.stderr
        finally:
            await box.destroy()

    code, stderr = anyio.run(main)
    assert code != 0 and "ran" not in stderr, stderr


@pytest.mark.parametrize(("fails", "outcome"), [(1, "passed"), (LAUNCHES, "infra_error")])
def test_a_host_programs_jail_that_fails_to_start(
    flaky_bwrap: Path, fails: int, outcome: str
) -> None:
    """``where: host``: the jail's recursive bind of the host meets a mount changing under it."""
    from harness.sandbox.local import LocalProvider
    from tests.models.conftest import kv_environment, make_ctx

    async def main() -> str:
        box = await LocalProvider().create(
            SandboxRequest(environment=kv_environment(), image_id=None)
        )
        try:
            host_jail.available.cache_clear()
            assert host_jail.available()  # checked before the launches fail, as preflight does
            flaky_bwrap.write_text(str(fails))
            params = {"command": "echo the answer", "where": "host"}
            ctx = make_ctx(box, agent="command", params=params)
            try:
                result = await CommandAgent().run(ctx)
            except (SandboxError, AgentFailure) as exc:
                return classify(exc)
            assert result.answer == "the answer"
            return "passed"
        finally:
            await box.destroy()

    assert anyio.run(main) == outcome


def test_bwraps_error_text_printed_by_a_host_program_is_the_programs_failure() -> None:
    require_bwrap()
    from harness.sandbox.local import LocalProvider
    from tests.models.conftest import kv_environment, make_ctx

    async def main() -> str:
        box = await LocalProvider().create(
            SandboxRequest(environment=kv_environment(), image_id=None)
        )
        try:
            host_jail.available.cache_clear()
            params = {"command": f"echo {shlex.quote(MOUNT_ERROR)} >&2; exit 1", "where": "host"}
            with pytest.raises(AgentFailure) as info:
                await CommandAgent().run(make_ctx(box, agent="command", params=params))
            return f"{classify(info.value)} {info.value.reason}"
        finally:
            await box.destroy()

    assert anyio.run(main) == "failed agent_crashed"
