"""Archives in and out of a Docker sandbox for grading: the agent's files exported under
their absolute names, and the clearing a grading sandbox gets before they are put in."""

from __future__ import annotations

import io
import shlex
import tarfile
from typing import Any

CLEAR_SCRIPT = r"""
for r in "$@"; do find "$r" -mindepth 1 -delete 2>/dev/null; rm -f "$r" 2>/dev/null; rmdir "$r" 2>/dev/null; done
for r in "$@"; do if [ -e "$r" ] || [ -L "$r" ]; then [ -d "$r" ] && [ -z "$(ls -A "$r")" ] || { echo "cannot clear $r" >&2; exit 1; }; fi; done
"""
"""Empty each path given (a directory that cannot be removed itself, such as the workdir,
is left empty), run as the unprivileged user in a fresh grading sandbox before the agent's
copies go in."""


def clear_command(roots: list[str]) -> str:
    return "set -- " + " ".join(shlex.quote(r) for r in roots) + "\n" + CLEAR_SCRIPT


def copy_renamed(stream: Any, out: tarfile.TarFile, base: str, name: str) -> None:
    """Copy the members of a Docker archive stream (named from ``base``, the archived
    path's last component) into ``out``, named from ``name`` instead."""
    from harness.sandbox.docker_images import _ChunkReader

    def rename(member_name: str) -> str:
        rest = member_name[len(base) :] if base and member_name.startswith(base) else member_name
        return (name + rest) if rest.startswith("/") or not rest else f"{name}/{rest}"

    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(stream)), mode="r|") as src:
        for member in src:
            member.name = rename(member.name)
            if member.islnk():
                member.linkname = rename(member.linkname)
            out.addfile(member, src.extractfile(member) if member.isreg() else None)
    for _ in stream:  # drain, so the connection goes back to the pool cleanly
        pass
