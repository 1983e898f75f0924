"""The ``unsafe-local`` backend: a fresh temporary directory per trial and host subprocesses.

It isolates nothing (commands run as you, on your machine, with network: an agent's
``kill -9 -1`` kills your processes) and says so once per run. ``sandbox: auto`` never picks
it; name it (``unsafe-local``, or its old name ``local``) for development, for speed in
tests, and for suites that only need answers. Isolated without Docker: ``bwrap``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process
from pydantic import Field

from harness import text
from harness.config.models import Options
from harness.errors import SandboxError
from harness.sandbox import grading_material, trial_dirs
from harness.sandbox.base import (
    BackendOptions,
    Environment,
    ExecResult,
    Sandbox,
    SandboxProvider,
    SandboxRequest,
)
from harness.sandbox.output import OUTPUT_LIMIT, read_at_most
from harness.sandbox.process import collect, kill_group
from harness.sandbox.workproduct import WorkProduct, replace_host_paths, tar_host_paths

if TYPE_CHECKING:
    from harness.sandbox.grading_material import GradingPlace

log = logging.getLogger(__name__)

_SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")


class LocalSandbox(Sandbox):
    isolated = False

    def __init__(self, root: Path, image_id: str | None):
        self.id = f"local-{uuid.uuid4().hex[:12]}"
        self.image_id = image_id
        self.root = root
        self.workdir = str(root)
        self._groups: set[int] = set()
        self._grading_dir: Path | None = None

    def _path(self, path: str) -> Path:
        """Resolve inside the sandbox directory; refuse paths that escape it (``../``, links)."""
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise PermissionError(f"path escapes the sandbox: {path}")
        return target

    async def open_process(self, cmd: str, *, stderr: Any) -> Process:
        """A long-lived ``bash -c cmd`` with stdin and stdout attached (a tool server);
        killed with the sandbox's other process groups on destroy."""
        base = {k: os.environ[k] for k in _SAFE_ENV_KEYS if k in os.environ}
        base.update(HOME=str(self.root), HARNESS_WORKDIR=str(self.root))
        try:
            proc = await anyio.open_process(
                ["bash", "-c", cmd],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=self.root,
                env=base,
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"local exec failed: {exc}") from exc
        self._groups.add(proc.pid)
        return proc

    async def exec(
        self, cmd, *, stdin=None, timeout=None, user=None, env=None, output_limit=OUTPUT_LIMIT
    ) -> ExecResult:
        if isinstance(stdin, str):
            stdin = stdin.encode()
        # Host secrets (API keys) never reach a sandbox, not even the unisolated one.
        base = {k: os.environ[k] for k in _SAFE_ENV_KEYS if k in os.environ}
        base.update(HOME=str(self.root), HARNESS_WORKDIR=str(self.root))
        base.update(env or {})
        start = time.monotonic()
        try:
            proc = await anyio.open_process(
                ["bash", "-c", cmd],
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                cwd=self.root,
                env=base,
                start_new_session=True,  # its own process group, killed as a whole
            )
        except OSError as exc:
            raise SandboxError(f"local exec failed: {exc}") from exc
        self._groups.add(proc.pid)
        done = await collect(proc, stdin=stdin, timeout=timeout, output_limit=output_limit)
        return ExecResult(
            exit_code=done.exit_code,
            stdout=text.decode(done.stdout),
            stderr=text.decode(done.stderr),
            duration_s=time.monotonic() - start,
            timed_out=done.timed_out,
            dropped=done.dropped,
        )

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        return await anyio.to_thread.run_sync(read_at_most, str(self._path(path)), limit)

    async def write_file(self, path: str, data: bytes) -> None:
        target = anyio.Path(self._path(path))
        await target.parent.mkdir(parents=True, exist_ok=True)
        await target.write_bytes(data)

    async def copy_in(self, src: Path, dest: str) -> None:
        target = self._path(dest)
        await anyio.to_thread.run_sync(lambda: shutil.copytree(src, target, dirs_exist_ok=True))

    def _host_of(self, path: str) -> Path | None:
        p, root = Path(path), self.root
        return p if p == root or root in p.parents else None

    async def export(self, paths: list[str]) -> WorkProduct:
        """``paths`` as one archive, read from the trial's directory after its sweep."""
        return await anyio.to_thread.run_sync(tar_host_paths, self.workdir, paths, self._host_of)

    async def import_product(self, product: WorkProduct, roots: list[str]) -> None:
        await anyio.to_thread.run_sync(
            replace_host_paths, product, roots, self.workdir, self._host_of
        )

    async def install_grading(self, hidden: Path | None) -> GradingPlace:
        """Hidden files copied to a directory of their own beside the trial's (this backend
        isolates nothing: the helper only cleans the environment)."""
        from harness.sandbox.grading_material import GradingPlace, grader_env

        def make() -> Path:
            place = trial_dirs.make_trial_dir("harness-trial", str(self.root.parent))
            if hidden is not None:
                shutil.copytree(hidden, place / "hidden")
            (place / "home").mkdir()
            (place / "as-agent").write_text(grading_material.LOCAL_AS_AGENT)
            (place / "as-agent").chmod(0o755)
            return place

        self._grading_dir = await anyio.to_thread.run_sync(make)
        hidden_dir = str(self._grading_dir / "hidden") if hidden is not None else None
        env = grader_env(
            self.workdir,
            hidden_dir,
            as_agent=str(self._grading_dir / "as-agent"),
            home=str(self._grading_dir / "home"),
        )
        return GradingPlace(hidden_dir, None, env)

    async def restore_files(self, files: Path) -> None:
        await anyio.to_thread.run_sync(
            lambda: shutil.copytree(files, self.root, symlinks=True, dirs_exist_ok=True)
        )

    async def sweep(self) -> int:
        """Kill the process groups of every command (their detached children included,
        unless they left the group: this backend cannot follow those)."""
        n = len(self._groups)
        for pgid in self._groups:
            kill_group(pgid)
        return n

    async def death_cause(self) -> str | None:
        return None

    async def switch_network(self, hosts: list[str], internet: bool = False) -> None:
        """Nothing to switch: commands have this machine's network in every phase."""
        return None

    async def destroy(self, interrupted: bool = False) -> None:
        for pgid in self._groups:  # background processes the trial left behind
            kill_group(pgid)
        self._groups.clear()
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(self.root, ignore_errors=True))
        if self._grading_dir is not None:
            await anyio.to_thread.run_sync(shutil.rmtree, self._grading_dir, True)


class LocalOptions(Options):
    """``sandbox_options`` of the ``unsafe-local`` backend."""

    base_dir: str | None = Field(
        None, description="where trial directories are made; default: the system's temp dir"
    )


class LocalProvider(SandboxProvider):
    name = "unsafe-local"
    isolated = False
    Options = LocalOptions

    @classmethod
    def honours(cls, options: BackendOptions) -> frozenset[str]:
        """Every policy is accepted and none enforced: commands have this machine's network
        and this user's rights (the backend isolates nothing, and says so at run start)."""
        return frozenset(
            {"none", "allowlist", "open", "switch-network", "grader-root", "grader-anywhere"}
        )

    def __init__(self, base_dir: str | None = None):
        self.base_dir = base_dir
        self._warned = False

    async def prepare(self, environments: list[Environment]) -> dict[str, str | None]:
        if not self._warned:
            log.warning(
                "sandbox 'unsafe-local' gives NO isolation: commands run on this machine as "
                "this user (use docker or bwrap for agents you do not trust)"
            )
            self._warned = True
        # No image: pin the environment's content hash instead, so drift is still visible.
        return {env.name: f"local:{_dir_digest(env.root)}" for env in environments}

    async def create(self, request: SandboxRequest) -> LocalSandbox:
        root = trial_dirs.make_trial_dir("harness-trial", self.base_dir)
        files = request.environment.files_dir
        if files and files.is_dir():
            await anyio.to_thread.run_sync(lambda: shutil.copytree(files, root, dirs_exist_ok=True))
        return LocalSandbox(root, request.image_id)

    async def close(self) -> None:
        return None

    def gc(self, running_run_ids=None) -> list[str]:
        """Remove trial directories left by killed runs on this host (``trial_dirs``)."""
        return [str(p) for p in trial_dirs.gc(self.base_dir)]


def _dir_digest(root: Path) -> str:
    """A short content hash of an environment directory (its recipe and files)."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


__all__ = ["LocalOptions", "LocalProvider", "LocalSandbox"]
