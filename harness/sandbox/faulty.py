"""``faulty``: a chaos wrapper around a real backend, for fault-injection runs and tests.

It fails a share of sandbox creations (``create_failure``) and kills a share of sandboxes
mid-trial (``kill``: the real sandbox is destroyed under the agent, so the next command
fails exactly as it would when the platform kills a container). Both are infrastructure
errors, so the orchestrator's crash-only retries and the report's crash counts can be
checked against a known fault rate. Configure it in a suite:

    sandbox: faulty
    sandbox_options: {inner: docker, create_failure: 0.2, kill: 0.05, seed: 1}
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, PrivateAttr

from harness.config.models import Options as BackendOptions
from harness.errors import SandboxError
from harness.sandbox.base import (
    AgentBuild,
    Environment,
    ExecResult,
    Sandbox,
    SandboxProvider,
    SandboxRequest,
)
from harness.sandbox.workproduct import WorkProduct

if TYPE_CHECKING:
    from harness.sandbox.grading_material import GradingPlace


class FaultySandbox(Sandbox):
    def __init__(self, inner: Sandbox, kill_at: int | None):
        self.inner = inner
        self.id, self.image_id, self.workdir = inner.id, inner.image_id, inner.workdir
        self.socket_dir, self.agent_path = inner.socket_dir, inner.agent_path
        self.isolated = inner.isolated
        self.kill_at = kill_at
        self.calls = 0

    async def _maybe_kill(self) -> None:
        self.calls += 1
        if self.kill_at is not None and self.calls >= self.kill_at:
            self.kill_at = None
            await self.inner.destroy(interrupted=True)
            raise SandboxError(f"injected fault: sandbox {self.id} killed mid-trial")

    async def exec(self, cmd: str, **kwargs) -> ExecResult:
        await self._maybe_kill()
        return await self.inner.exec(cmd, **kwargs)

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        return await self.inner.read_file(path, limit)

    async def write_file(self, path: str, data: bytes) -> None:
        await self.inner.write_file(path, data)

    async def copy_in(self, src: Path, dest: str) -> None:
        await self.inner.copy_in(src, dest)

    async def alive(self) -> bool:
        return await self.inner.alive()

    async def sweep(self) -> int:
        return await self.inner.sweep()

    async def stop_agent(self) -> None:
        await self.inner.stop_agent()

    async def open_process(self, cmd: str, *, stderr: Any) -> Any | None:
        return await self.inner.open_process(cmd, stderr=stderr)

    async def export(self, paths: list[str]) -> WorkProduct:
        await self._maybe_kill()
        return await self.inner.export(paths)

    async def export_services(self, wanted: dict, product: WorkProduct) -> None:
        await self.inner.export_services(wanted, product)

    async def import_product(self, product: WorkProduct, roots: list[str]) -> None:
        await self.inner.import_product(product, roots)

    async def install_grading(self, hidden: Path | None) -> GradingPlace:
        return await self.inner.install_grading(hidden)

    async def restore_files(self, files: Path) -> None:
        await self.inner.restore_files(files)

    async def end_grading(self) -> None:
        await self.inner.end_grading()

    async def switch_network(self, hosts: list[str], internet: bool = False) -> None:
        await self.inner.switch_network(hosts, internet)

    async def death_cause(self) -> str | None:
        return await self.inner.death_cause()

    async def destroy(self, interrupted: bool = False) -> None:
        await self.inner.destroy(interrupted)


class FaultyOptions(BackendOptions):
    """``sandbox_options`` of the ``faulty`` backend; every other key is an option of the
    ``inner`` backend, checked against that backend's own options."""

    inner: str = Field("local", description="the real backend faults are injected into")
    create_failure: float = Field(0.2, ge=0, le=1, description="share of creations that fail")
    kill: float = Field(0.05, ge=0, le=1, description="share of sandboxes killed mid-trial")
    seed: int = Field(0, description="seed of the fault draws")
    _inner_options: BackendOptions = PrivateAttr(default_factory=BackendOptions)


class FaultyProvider(SandboxProvider):
    name = "faulty"
    Options = FaultyOptions

    @classmethod
    def validate_options(cls, raw: dict[str, Any]) -> FaultyOptions:
        from harness.sandbox import BACKENDS

        own = {k: v for k, v in raw.items() if k in FaultyOptions.model_fields}
        options = FaultyOptions.model_validate(own)
        inner = BACKENDS.load(options.inner)
        rest = {k: v for k, v in raw.items() if k not in own}
        options._inner_options = inner.validate_options(rest)
        return options

    @classmethod
    def isolates(cls, options: BackendOptions) -> bool:
        """As the inner backend does."""
        from harness.sandbox import BACKENDS

        assert isinstance(options, FaultyOptions)
        return BACKENDS.load(options.inner).isolates(options._inner_options)

    @classmethod
    def runs_agent_programs(cls, options: BackendOptions) -> bool:
        """As the inner backend does."""
        from harness.sandbox import BACKENDS

        assert isinstance(options, FaultyOptions)
        inner = BACKENDS.load(options.inner)
        return inner.runs_agent_programs(options._inner_options)

    @classmethod
    def honours(cls, options: BackendOptions) -> frozenset[str]:
        """As the inner backend does."""
        from harness.sandbox import BACKENDS

        assert isinstance(options, FaultyOptions)
        return BACKENDS.load(options.inner).honours(options._inner_options)

    @classmethod
    def from_options(cls, options: BackendOptions) -> FaultyProvider:
        assert isinstance(options, FaultyOptions)
        inner = options._inner_options
        return cls(
            **{k: v for k, v in options if k in options.model_fields_set},
            **{k: v for k, v in inner if k in inner.model_fields_set},
        )

    def __init__(
        self,
        inner: str = "local",
        create_failure: float = 0.2,
        kill: float = 0.05,
        seed: int = 0,
        **options: Any,
    ):
        from harness.sandbox import get_provider

        self.inner = get_provider(inner, **options)
        self.isolated = self.inner.isolated
        self.create_failure, self.kill = float(create_failure), float(kill)
        self.rng = random.Random(seed)
        self.injected = {"create_failure": 0, "kill": 0}

    async def prepare(self, environments: list[Environment]) -> dict[str, str | None]:
        return await self.inner.prepare(environments)

    async def prepare_agents(
        self, wanted: list[tuple[Environment, AgentBuild]]
    ) -> dict[str, dict[str, str]]:
        return await self.inner.prepare_agents(wanted)

    async def create(self, request: SandboxRequest) -> FaultySandbox:
        if self.rng.random() < self.create_failure:
            self.injected["create_failure"] += 1
            raise SandboxError("injected fault: sandbox creation failed")
        kill_at = None
        if self.rng.random() < self.kill:
            self.injected["kill"] += 1
            kill_at = self.rng.randint(1, 3)
        return FaultySandbox(await self.inner.create(request), kill_at)

    async def healthy(self) -> bool:
        return await self.inner.healthy()

    def gc(self) -> list[str]:
        return self.inner.gc()

    async def prepare_networks(self, wanted) -> None:
        await self.inner.prepare_networks(wanted)

    async def close(self) -> None:
        await self.inner.close()
