"""Your own agent program, pinned by content and installed into sandboxes as the ready-made
CLIs are (``cli_agents``, ``npm_stage``).

The command agent's ``program`` (a file or a folder beside the suite) is copied once per run
into ``$HARNESS_CLI_CACHE/programs/<sha256>`` (read-only; the digest covers every file's
path, mode and bytes, ``__pycache__`` and ``.git`` left out). That copy is what every trial
runs, whatever happens to the original during the run: Docker adds it to each environment's
pinned image as one layer of its own (``docker_agent_images``), so the task image underneath,
which comparisons pair on, is unchanged; bwrap binds it read-only at the same path;
``unsafe-local`` runs it from the cache. The lock file records it by its digest.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

from harness.agents.npm_stage import cache_root
from harness.errors import EnvironmentBuildError
from harness.sandbox.base import AgentBuild

IGNORED = ("__pycache__", ".git")


@functools.cache
def program_build(source: str) -> AgentBuild:
    """The build of the program at ``source`` (absolute), staged on first use in this
    process: later calls (every trial of the run) get the same pinned copy."""
    path = Path(source)
    staged, digest = stage_program(path)
    folder = path.is_dir()
    return AgentBuild(
        key=f"program-{digest[:12]}",
        spec=f"file:{path.name}{'/' if folder else ''}@sha256:{digest[:12]}",
        executable="" if folder else path.name,
        fetch=lambda: staged,
        tree=True,
    )


def stage_program(source: Path) -> tuple[Path, str]:
    """(the staged read-only folder, the SHA-256 of its files). A file is staged as a
    folder holding it. Modes are normalised (folders and owner-executable files 0555, other
    files 0444), so the digest depends on the bytes and the executable bits only."""
    from harness.sandbox.docker_images import files_digest

    root = cache_root() / "programs"
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    try:
        if source.is_dir():
            ignore = shutil.ignore_patterns(*IGNORED)
            shutil.copytree(source, work, symlinks=True, ignore=ignore, dirs_exist_ok=True)
        else:
            shutil.copy2(source, work / source.name)
        _read_only(work)
        digest = files_digest(work)
        final = root / digest
        if not final.exists():
            try:
                os.rename(work, final)  # the same parent: a read-only folder may move
            except OSError:  # another process staged the same bytes first
                if not final.exists():
                    raise
        return final, digest
    except OSError as exc:
        raise EnvironmentBuildError(f"cannot stage the agent program {source}: {exc}") from exc
    finally:
        if work.exists():
            _writable(work)
            shutil.rmtree(work, ignore_errors=True)


def _read_only(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):  # files before their folders
        if path.is_symlink():
            continue
        runnable = path.is_dir() or path.stat().st_mode & 0o100
        path.chmod(0o555 if runnable else 0o444)
    folder.chmod(0o555)


def _writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink() and path.is_dir():
            path.chmod(0o755)


__all__ = ["program_build", "stage_program"]
