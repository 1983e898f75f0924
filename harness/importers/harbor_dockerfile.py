"""Harbor's Dockerfiles on Docker's classic builder: ``COPY --chmod`` rewritten, the rest of
BuildKit's own syntax refused.

Harbor builds with BuildKit; the harness builds through the daemon's classic build API
(``docker_images.build_dockerfile``), and this machine's Docker has no BuildKit client
(``docker buildx`` is not installed and Debian bookworm does not package it), so a
``COPY --chmod=755 test.sh /tests/test.sh`` fails to build ("the --chmod option requires
BuildKit"). The classic builder's ``COPY`` keeps the mode a file has in the build context,
so the import gives the copied context a copy of each such source with that mode
(``.harness-chmod/<line>-<n>/<name>``; the source itself is left as it is for any other
``COPY`` of it) and drops the flag: the image gets the same files, modes and owners.
Refused, naming the file and line: ``--chmod`` with a mode that is not octal, from another
stage or image (``--from``), of a URL, or of a source matching nothing; ``RUN --mount`` and
BuildKit's other ``RUN`` and ``COPY`` flags; heredocs (``RUN <<EOF``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

CONTEXT = ".harness-chmod"
"""The build-context directory holding the sources given their ``--chmod`` mode."""
_CLASSIC_FLAGS = {"COPY": {"chown", "from"}, "ADD": {"chown"}, "RUN": set()}
_INSTRUCTION = re.compile(r"^\s*(COPY|ADD|RUN)\s+(.*)$", re.IGNORECASE | re.DOTALL)
_FLAG = re.compile(r"--([a-z-]+)(?:=(\S*))?")


class Refused(ValueError):
    """The Dockerfile needs BuildKit beyond ``COPY --chmod``; the one-line reason."""


@dataclass(frozen=True)
class _Copy:
    """One ``COPY``/``ADD`` with ``--chmod``: where it is and what it copies."""

    first: int
    """index of its first line in the file's lines"""
    last: int
    keyword: str
    flags: list[str]
    """its other flags, as written"""
    sources: list[str]
    dest: str
    mode: int
    json_form: bool


def _instructions(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, text joined) of each instruction, comments skipped."""
    out, start, parts = [], None, []
    for i, line in enumerate(lines):
        if start is None and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if start is None:
            start = i
        parts.append(line.rstrip("\n"))
        if line.rstrip("\n").endswith("\\"):
            parts[-1] = parts[-1][:-1]
            continue
        out.append((start, i, " ".join(p.strip() for p in parts)))
        start, parts = None, []
    if start is not None:
        out.append((start, len(lines) - 1, " ".join(p.strip() for p in parts)))
    return out


def _read(where: str, first: int, keyword: str, rest: str) -> _Copy | None:
    """The ``--chmod`` copy this instruction is, or None; raises ``Refused``."""
    flags: list[str] = []
    mode: str | None = None
    while rest.startswith("--"):
        word, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        found = _FLAG.fullmatch(word)
        name = found.group(1) if found else word
        if name == "chmod" and keyword != "RUN":
            mode = found.group(2) if found else None
            continue
        if name not in _CLASSIC_FLAGS[keyword]:
            raise Refused(f"a Dockerfile flag only BuildKit has ({where}:{first + 1}: {word})")
        flags.append(word)
    if rest.startswith("<<"):
        raise Refused(f"a Dockerfile heredoc, which only BuildKit reads ({where}:{first + 1})")
    if mode is None:
        return None
    if not re.fullmatch(r"[0-7]{3,4}", mode):
        raise Refused(f"a --chmod mode that is not octal ({where}:{first + 1}: {mode})")
    if any(f.startswith("--from") for f in flags):
        raise Refused(f"--chmod of another stage's files ({where}:{first + 1}: --from)")
    json_form = rest.startswith("[")
    try:
        words = json.loads(rest) if json_form else rest.split()
    except json.JSONDecodeError:
        raise Refused(f"a readable {keyword} ({where}:{first + 1})") from None
    if len(words) < 2:
        raise Refused(f"a readable {keyword} ({where}:{first + 1}: no destination)")
    return _Copy(first, first, keyword, flags, words[:-1], words[-1], int(mode, 8), json_form)


def chmod_copies(dockerfile: Path) -> list[_Copy]:
    """The file's ``COPY --chmod``/``ADD --chmod``; raises ``Refused`` for any other
    BuildKit syntax."""
    lines = dockerfile.read_text(errors="replace").splitlines(keepends=True)
    where = dockerfile.name
    out = []
    for first, last, text in _instructions(lines):
        found = _INSTRUCTION.match(text)
        if found is None:
            continue
        copy = _read(where, first, found.group(1).upper(), found.group(2).strip())
        if copy is not None:
            out.append(dataclasses.replace(copy, last=last))
    return out


def _matches(context: Path, source: str, where: str) -> list[Path]:
    if "://" in source:
        raise Refused(f"--chmod of a URL ({where}: {source})")
    pattern = posixpath.normpath(source.lstrip("/"))
    found = [context] if pattern == "." else sorted(context.glob(pattern))
    if not found:
        raise Refused(f"a --chmod source in the build context ({where}: {source} matches nothing)")
    root = context.resolve()
    for path in found:
        if root != path.resolve() and root not in path.resolve().parents:
            raise Refused(f"a --chmod source in the build context ({where}: {source})")
    return found


def check(context: Path, dockerfile: Path) -> None:
    """Raise ``Refused`` when ``rewrite`` cannot make ``dockerfile`` classic."""
    for copy in chmod_copies(dockerfile):
        for source in copy.sources:
            _matches(context, source, f"{dockerfile.name}:{copy.first + 1}")


def _chmod_tree(path: Path, mode: int) -> None:
    for item in (path, *path.rglob("*")) if path.is_dir() else (path,):
        if not item.is_symlink():
            os.chmod(item, mode)


def rewrite(context: Path, dockerfile: Path) -> int:
    """Rewrite ``dockerfile`` (in ``context``, the import's own copy) for the classic
    builder: each ``--chmod`` source copied under ``CONTEXT`` with the mode, the flag
    dropped. Returns the instructions rewritten; raises ``Refused`` (``check``)."""
    copies = chmod_copies(dockerfile)
    if not copies:
        return 0
    lines = dockerfile.read_text(errors="replace").splitlines(keepends=True)
    for copy in reversed(copies):
        where = f"{dockerfile.name}:{copy.first + 1}"
        sources = []
        for n, path in enumerate(p for s in copy.sources for p in _matches(context, s, where)):
            home = context / CONTEXT / f"{dockerfile.name}-{copy.first + 1}-{n}"
            home.mkdir(parents=True, exist_ok=True)
            given = home / (path.name or "context")
            if path.is_dir():
                shutil.copytree(path, given, symlinks=True, ignore=_skip_own(context))
            else:
                shutil.copy2(path, given, follow_symlinks=False)
            _chmod_tree(given, copy.mode)
            sources.append(given.relative_to(context).as_posix())
        words = [*sources, copy.dest]
        args = json.dumps(words) if copy.json_form else " ".join(words)
        text = " ".join([copy.keyword, *copy.flags, args])
        lines[copy.first : copy.last + 1] = [
            f"# `harness import harbor`: --chmod={copy.mode:o} as the sources' own mode\n",
            text + "\n",
        ]
    dockerfile.write_text("".join(lines))
    ignore = context / ".dockerignore"
    if ignore.is_file():  # never left out of the build context
        ignore.write_text(ignore.read_text().rstrip("\n") + f"\n!{CONTEXT}\n!{CONTEXT}/**\n")
    return len(copies)


def _skip_own(context: Path):
    own = (context / CONTEXT).resolve()
    return lambda d, names: [n for n in names if (Path(d) / n).resolve() == own]


__all__ = ["CONTEXT", "Refused", "check", "chmod_copies", "rewrite"]
