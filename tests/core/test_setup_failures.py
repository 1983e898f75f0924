"""A failing setup command is the task's fault only while its sandbox is alive: when the
sandbox died under it (a daemon shutting down), the attempt is an infrastructure error and
is retried. The sandbox here is a fake that injects exactly that fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.models import EnvironmentSpec, Task
from harness.errors import SandboxError, classify
from harness.grading import plan
from harness.sandbox.base import Environment, ExecResult
from harness.trial_steps import TaskSetupError, setup

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _DyingSandbox:
    id, image_id, workdir = "fake", None, "/work"

    def __init__(self, alive: bool):
        self._alive = alive

    async def exec(self, cmd: str, **_: object) -> ExecResult:
        return ExecResult(126, "OCI runtime exec failed: container is stopping", "")

    async def alive(self) -> bool:
        return self._alive


ENV = Environment(spec=EnvironmentSpec(name="e", setup=["make ready"]), root=Path("."))
TASK = Task(id="t", instruction="do it", environment="e", graders=[{"type": "state_diff"}])


async def test_setup_failure_in_a_dead_sandbox_is_infrastructure() -> None:
    with pytest.raises(SandboxError, match="died during setup") as info:
        await setup(_DyingSandbox(alive=False), ENV, TASK, plan(ENV, TASK, [], False))
    assert classify(info.value) == "infra_error"


async def test_setup_failure_in_a_live_sandbox_is_the_task() -> None:
    with pytest.raises(TaskSetupError, match="make ready"):
        await setup(_DyingSandbox(alive=True), ENV, TASK, plan(ENV, TASK, [], False))
