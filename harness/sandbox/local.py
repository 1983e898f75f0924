"""The ``local`` backend: a fresh temporary directory per trial and host subprocesses.

It isolates nothing (commands run as you, on your machine, with network) and says so once
per run. Use it for development and for suites that only need answers.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import anyio

from harness.errors import SandboxError
from harness.sandbox.base import Environment, ExecResult, SandboxRequest

log = logging.getLogger(__name__)

_SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")


class LocalSandbox:
    def __init__(self, root: Path, image_id: str | None):
        self.id = f"local-{uuid.uuid4().hex[:12]}"
        self.image_id = image_id
        self.root = root
        self.workdir = str(root)

    def _path(self, path: str) -> Path:
        """Resolve inside the sandbox directory; refuse paths that escape it (``../``, links)."""
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise PermissionError(f"path escapes the sandbox: {path}")
        return target

    async def exec(self, cmd, *, stdin=None, timeout=None, user=None, env=None) -> ExecResult:
        if isinstance(stdin, str):
            stdin = stdin.encode()
        # Host secrets (API keys) never reach a sandbox, not even the unisolated one.
        base = {k: os.environ[k] for k in _SAFE_ENV_KEYS if k in os.environ}
        base.update(HOME=str(self.root), HARNESS_WORKDIR=str(self.root))
        base.update(env or {})
        start = time.monotonic()
        timed_out = False
        try:
            with anyio.fail_after(timeout) if timeout else _nullcontext():
                proc = await anyio.run_process(
                    ["bash", "-c", cmd],
                    input=stdin,
                    cwd=self.root,
                    env=base,
                    check=False,
                    start_new_session=True,
                )
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        except TimeoutError:
            timed_out, code, out, err = True, 124, b"", f"timed out after {timeout}s".encode()
        except OSError as exc:
            raise SandboxError(f"local exec failed: {exc}") from exc
        return ExecResult(
            exit_code=code,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
        )

    async def read_file(self, path: str) -> bytes:
        return await anyio.Path(self._path(path)).read_bytes()

    async def write_file(self, path: str, data: bytes) -> None:
        target = anyio.Path(self._path(path))
        await target.parent.mkdir(parents=True, exist_ok=True)
        await target.write_bytes(data)

    async def copy_in(self, src: Path, dest: str) -> None:
        target = self._path(dest)
        await anyio.to_thread.run_sync(lambda: shutil.copytree(src, target, dirs_exist_ok=True))

    async def destroy(self, interrupted: bool = False) -> None:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(self.root, ignore_errors=True))


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class LocalProvider:
    name = "local"
    isolated = False

    def __init__(self, base_dir: str | None = None, **_: object):
        self.base_dir = base_dir
        self._warned = False

    async def prepare(self, environments: list[Environment]) -> dict[str, str | None]:
        if not self._warned:
            log.warning(
                "sandbox 'local' gives NO isolation: commands run on this machine as this user"
            )
            self._warned = True
        # No image: pin the environment's content hash instead, so drift is still visible.
        return {env.name: f"local:{_dir_digest(env.root)}" for env in environments}

    async def create(self, request: SandboxRequest) -> LocalSandbox:
        root = Path(tempfile.mkdtemp(prefix="harness-trial-", dir=self.base_dir))
        files = request.environment.files_dir
        if files and files.is_dir():
            await anyio.to_thread.run_sync(lambda: shutil.copytree(files, root, dirs_exist_ok=True))
        return LocalSandbox(root, request.image_id)

    async def close(self) -> None:
        return None


def _dir_digest(root: Path) -> str:
    """A short content hash of an environment directory (its recipe and files)."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


__all__ = ["LocalProvider", "LocalSandbox"]
