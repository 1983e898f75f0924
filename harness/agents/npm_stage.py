"""Fetch an agent CLI's official build from the npm registry once, into a host cache.

Claude Code and Codex CLI ship their Linux x64 builds as self-contained native executables
inside npm packages (``@anthropic-ai/claude-code-linux-x64``, ``@openai/codex`` at its
``-linux-x64`` version). ``npm install --prefix`` puts the pinned version in
``$HARNESS_CLI_CACHE`` (default ``~/.cache/harness/cli``); the Docker backend copies the
executable into an image built on the task's image (``docker_agent_images``), bwrap binds
it read-only into its sandboxes, so nothing inside a sandbox needs network or Node.js. Install scripts never run (``--ignore-scripts``): the executable is in the
tarball.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import EnvironmentBuildError


@dataclass(frozen=True)
class CliPackage:
    """One pinned CLI build: the npm spec to install and the executable inside it."""

    label: str
    """What the user knows it as, e.g. ``@anthropic-ai/claude-code``."""
    spec: str
    """What ``npm install`` gets, e.g. ``@anthropic-ai/claude-code-linux-x64@2.1.332``."""
    executable: str
    """The executable's path below ``node_modules``."""
    version: str


def cache_root() -> Path:
    return Path(os.environ.get("HARNESS_CLI_CACHE") or Path.home() / ".cache/harness/cli")


def install_dir(package: CliPackage) -> Path:
    """Where ``package`` is installed in the cache (one directory per pinned spec)."""
    return cache_root() / package.spec.replace("/", "+").replace("@", "_")


def staged(package: CliPackage) -> Path | None:
    """The executable of ``package`` when a finished install of it is in the cache."""
    root = install_dir(package)
    exe = root / "node_modules" / package.executable
    return exe if (root / ".harness-installed").is_file() and exe.is_file() else None


def stage(package: CliPackage, timeout_s: float = 600.0) -> Path:
    """The executable of ``package`` on this host, installed from npm on first use.

    Concurrent trials wait on a file lock; the finished install is marked so a half-done one
    is never used. Raises ``EnvironmentBuildError`` (the run cannot start) when npm fails.
    """
    ready = staged(package)
    if ready is not None:
        return ready
    root = install_dir(package)
    exe = root / "node_modules" / package.executable
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = staged(package)
        if ready is not None:
            return ready
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        npm = shutil.which("npm")
        if npm is None:
            raise EnvironmentBuildError(
                f"installing {package.label} {package.version} needs npm on this machine"
            )
        argv = [npm, "install", "--prefix", str(root), "--ignore-scripts", "--no-audit"]
        try:
            proc = subprocess.run(
                [*argv, "--no-fund", "--omit=dev", package.spec],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentBuildError(f"npm install {package.spec} timed out") from exc
        if proc.returncode != 0 or not exe.is_file():
            raise EnvironmentBuildError(
                f"npm install {package.spec} failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-400:]}"
            )
        exe.chmod(0o755)
        (root / ".harness-installed").write_text(package.spec + "\n")
    return exe


__all__ = ["CliPackage", "cache_root", "install_dir", "stage", "staged"]
