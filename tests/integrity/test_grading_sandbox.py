"""The result channel of a grading sandbox holds, on Docker and bwrap: code under test run
through ``$HARNESS_AS_AGENT`` runs as the unprivileged user and can read neither the
grader's nonce (its environment, its parent's, PID 1's command line, any process's) nor
the hidden files, and can rewrite neither; and the agent's own sandbox on Docker runs as
uid 1000 with the system's directories closed to it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness.config.models import EnvironmentSpec, Limits, StateSpec
from harness.sandbox.base import Environment, SandboxRequest
from tests.conftest import require_docker
from tests.integrity.test_bwrap_sandbox import require_bwrap

NONCE = "n0nce-" + "7" * 24
SECRET = "hidden-expectation-42"

PROBE = r"""
{ cat /proc/self/environ /proc/$PPID/environ /proc/1/cmdline /proc/1/environ
  for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; done
  cat "$HIDDEN_DIR"/* /opt/harness/hidden/* ; ls -la /opt/harness/hidden
  env; } 2>/dev/null | tr '\0' '\n'
echo forged > /opt/harness/hidden/test.sh 2>/dev/null && echo WROTE-HIDDEN
echo "uid=$(id -u)"
"""


def _env(tmp: Path) -> Environment:
    files = tmp / "env" / "files"
    files.mkdir(parents=True)
    (files / "probe.sh").write_text(PROBE)
    spec = EnvironmentSpec(
        name="grading-probe",
        image={"ref": "harness-base:latest"},
        files="files",
        state=StateSpec(kind="none"),
    )
    return Environment(spec=spec, root=tmp / "env")


async def _channel(provider, tmp: Path) -> str:
    env = _env(tmp)
    hidden = tmp / "hidden"
    hidden.mkdir()
    (hidden / "test.sh").write_text(f"# expects {SECRET}\n")
    await provider.prepare([env])
    request = SandboxRequest(env, None, {"harness.run": "grading-probe"}, Limits(), grading=True)
    box = await provider.create(request)
    try:
        place = await box.install_grading(hidden)
        assert place.hidden_dir is not None
        grader = await box.exec(
            'cat "$HIDDEN_DIR/test.sh"; "$HARNESS_AS_AGENT" /bin/bash probe.sh',
            user=place.user,
            env={**place.env, "HARNESS_RESULT_NONCE": NONCE},
            timeout=60,
        )
    finally:
        await box.destroy()
    out = grader.stdout
    assert out.startswith(f"# expects {SECRET}"), grader  # the grader itself reads them
    return out[len(f"# expects {SECRET}") :]


def _check(out: str) -> None:
    assert "uid=1000" in out, out
    assert NONCE not in out, "the code under test read the nonce"
    assert SECRET not in out, "the code under test read the hidden files"
    assert "WROTE-HIDDEN" not in out
    assert "HARNESS_RESULT_NONCE" not in out


def test_the_channel_holds_on_bwrap(tmp_path):
    require_bwrap()
    from harness.sandbox.bwrap import BwrapProvider

    _check(anyio.run(_channel, BwrapProvider(base_dir=str(tmp_path)), tmp_path))


@pytest.mark.usefixtures("docker_ready")
def test_the_channel_holds_on_docker(tmp_path):
    require_docker()
    from harness.sandbox.docker import DockerProvider

    async def go() -> str:
        provider = DockerProvider()
        try:
            return await _channel(provider, tmp_path)
        finally:
            await provider.close()

    _check(anyio.run(go))


@pytest.mark.usefixtures("docker_ready")
def test_docker_agents_are_unprivileged_by_default(tmp_path):
    require_docker()
    from harness.sandbox.docker import DockerProvider

    async def go() -> str:
        provider = DockerProvider()
        env = _env(tmp_path)
        try:
            box = await provider.create(SandboxRequest(env, None, {}, Limits()))
            try:
                r = await box.exec(
                    "id -u; touch /work/mine && echo work-ok; "
                    "for d in /usr/local/bin /usr/bin /etc; do touch $d/x 2>/dev/null && echo wrote-$d; done"
                )
                return r.stdout
            finally:
                await box.destroy()
        finally:
            await provider.close()

    out = anyio.run(go)
    assert out.split()[0] == "1000" and "work-ok" in out and "wrote-" not in out, out


AFTER = (
    "id -u; cat /opt/harness/hidden/test.sh; touch /opt/harness/home/x && echo WROTE-HOME; "
    "ls /opt/harness 2>/dev/null | tr '\\n' ' '; true"
)


async def _back_to_agent(provider, tmp: Path) -> tuple[str, str, str]:
    """An agent's sandbox graded in place, then handed back (a multi-step task's next step):
    (the grader's view, the agent's view after ``end_grading``, what exec as root gave)."""
    env = _env(tmp)
    hidden = tmp / "hidden"
    hidden.mkdir()
    (hidden / "test.sh").write_text(f"# expects {SECRET}\n")
    await provider.prepare([env])
    box = await provider.create(SandboxRequest(env, None, {}, Limits(), in_place=True))
    try:
        place = await box.install_grading(hidden)
        grader = await box.exec(AFTER, user=place.user, env=place.env, timeout=60)
        await box.end_grading()
        agent = await box.exec(AFTER, timeout=60)
        try:
            root = (await box.exec("id -u", user="0:0", timeout=60)).stdout
        except Exception as exc:  # refused: the agent's failure
            root = f"refused: {exc}"
    finally:
        await box.destroy()
    return grader.stdout, agent.stdout, root


def _check_back(grader: str, agent: str, root: str, backend: str) -> None:
    assert SECRET in grader, grader  # the grader saw its material
    assert SECRET not in agent and "WROTE-HOME" not in agent, agent
    assert agent.split()[0] == "1000", agent
    if backend == "docker":  # bwrap runs everything as its one user anyway
        assert root.startswith("refused:") and "run as 1000" in root, root


def test_an_in_place_sandbox_goes_back_to_the_agent_on_bwrap(tmp_path):
    require_bwrap()
    from harness.sandbox.bwrap import BwrapProvider

    out = anyio.run(_back_to_agent, BwrapProvider(base_dir=str(tmp_path)), tmp_path)
    _check_back(*out, "bwrap")


@pytest.mark.usefixtures("docker_ready")
def test_an_in_place_sandbox_goes_back_to_the_agent_on_docker(tmp_path):
    require_docker()
    from harness.sandbox.docker import DockerProvider

    async def go() -> tuple[str, str, str]:
        provider = DockerProvider()
        try:
            return await _back_to_agent(provider, tmp_path)
        finally:
            await provider.close()

    _check_back(*anyio.run(go), "docker")
