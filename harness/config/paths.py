"""Paths in config files stay inside the tree they belong to.

A task's ``hidden:`` directory stays under its task file's folder; an
environment's ``files:``, ``policy:`` and ``dockerfile`` under the environment's folder.
Symlinks count by where they point: a link to /etc/shadow inside ``hidden/`` is refused, since
everything there is copied into sandboxes.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import ConfigError

MAX_TREE_ENTRIES = 20_000
"""Most files and directories a copied tree (hidden:, files:) may hold."""


def inside(root: Path, target: Path) -> bool:
    """Whether ``target`` (symlinks followed) lies in ``root`` (symlinks followed)."""
    try:
        target.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def check_inside(
    root: Path, target: Path, file: Path | str, field: str, line: int | None, what: str
) -> None:
    """Refuse ``target`` when it leaves ``root`` (a ``..`` path, an absolute path or a link)."""
    if not inside(root, target):
        raise ConfigError(
            str(file), field, f"{target} leaves {what} ({root.resolve()}); refused", line
        )


def check_tree(root: Path, tree: Path, file: Path | str, field: str, line: int | None) -> None:
    """Refuse a copied tree holding a symlink that points out of ``root``, or too many files."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(tree, followlinks=False):
        for name in (*dirnames, *filenames):
            count += 1
            entry = Path(dirpath) / name
            if count > MAX_TREE_ENTRIES:
                raise ConfigError(
                    str(file), field, f"{tree} holds more than {MAX_TREE_ENTRIES} entries", line
                )
            if entry.is_symlink() and not inside(root, entry):
                raise ConfigError(
                    str(file),
                    field,
                    f"symlink {entry} points outside {root.resolve()}; refused",
                    line,
                )
