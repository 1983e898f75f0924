"""Parse YAML files that may be hostile: bounded size and alias expansion, no duplicate keys.

A YAML alias lets a few hundred bytes stand for billions of nodes ("billion laughs"), and an
anchor may contain itself. Both are refused here, before anything walks the document, with a
one-line ``ConfigError``. The limits are stated in docs/suite.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.errors import ConfigError

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Largest suite, task or environment file read (4 MiB)."""
MAX_NODES = 200_000
"""Most YAML nodes a document may hold once every alias is expanded."""

FieldPath = tuple[str | int, ...]
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster
_MERGE = "tag:yaml.org,2002:merge"


def read_yaml(path: Path) -> tuple[Any, dict[FieldPath, int]]:
    """Parse a YAML file, returning its data and a field-path → 1-based line map."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigError(
                str(path),
                "",
                f"file is {size} bytes; the most a config file may be is {MAX_FILE_BYTES}",
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(path), "", "file not found") from None
    except IsADirectoryError:
        raise ConfigError(str(path), "", "is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), "", f"cannot read file: {exc}") from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        _check_shape(node, path)
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(
            str(path), "", f"invalid YAML: {problem}", mark.line + 1 if mark else None
        ) from None
    except RecursionError:
        raise ConfigError(str(path), "", "invalid YAML: nested too deeply") from None
    finally:
        loader.dispose()
    return data, line_map(node)


def _check_shape(root: yaml.Node, path: Path) -> None:
    """Refuse self-containing anchors, alias expansion beyond MAX_NODES and duplicate keys.

    Each distinct node is visited once (aliases share node objects), and its expanded size
    is memoised, so this costs the size of the file, not of its expansion.
    """
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise ConfigError(
                str(path),
                "",
                "invalid YAML: an anchor contains an alias to itself",
                node.start_mark.line + 1,
            )
        if depth > 200:
            raise ConfigError(
                str(path),
                "",
                "invalid YAML: nested more than 200 levels deep",
                node.start_mark.line + 1,
            )
        open_.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != _MERGE:
                    if k.value in seen:
                        raise ConfigError(
                            str(path),
                            str(k.value),
                            f"duplicate key (first on line {seen[k.value]})",
                            k.start_mark.line + 1,
                        )
                    seen[k.value] = k.start_mark.line + 1
                total += size(k, depth + 1) + size(v, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item, depth + 1)
        open_.discard(key)
        if total > MAX_NODES:
            raise ConfigError(
                str(path),
                "",
                f"invalid YAML: aliases expand to more than {MAX_NODES} nodes",
                node.start_mark.line + 1,
            )
        sizes[key] = total
        return total

    size(root, 0)


def line_map(root: yaml.Node) -> dict[FieldPath, int]:
    """Map each field path to its line. An aliased node is walked once, at its first path:
    errors under a later alias point at the anchor's lines, which is where the text is."""
    out: dict[FieldPath, int] = {}
    walked: set[int] = set()
    stack: list[tuple[yaml.Node, FieldPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        out.setdefault(path, node.start_mark.line + 1)
        if id(node) in walked:
            continue
        walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, str(key.value))
                out.setdefault(sub, key.start_mark.line + 1)
                stack.append((value, sub))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                stack.append((item, (*path, i)))
    return out
