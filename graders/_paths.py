"""Paths into JSON state documents: dotted patterns with wildcards, and tree helpers.

A *path* is a tuple of keys, e.g. ``("orders", "W1001", "status")``. A *pattern* is the
dotted string users write in YAML, e.g. ``"orders.*.updated_at"``:

- each dot-separated part matches one key, with shell-style wildcards inside it
  (``*`` any characters, ``?`` one character, ``[ab]`` a class): ``"orders.W10*.status"``;
- ``**`` as a whole part matches any number of keys (zero included): ``"**.updated_at"``;
- keys may themselves contain dots (file paths such as ``etc/app.conf``): a key is matched
  by one *or more* consecutive parts joined with dots, so ``"files.etc/app.conf.mode"``
  matches ``("files", "etc/app.conf", "mode")``.

A pattern ignores the path it matches and everything below it.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import cache, lru_cache
from typing import Any

Path = tuple[str, ...]


class _Absent:
    """Marks a key that does not exist on one side of a comparison."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<absent>"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


def dotted(path: Path) -> str:
    return ".".join(str(p) for p in path)


@lru_cache(maxsize=1024)
def _parts(pattern: str) -> tuple[str, ...]:
    return tuple(pattern.split("."))


def _match(parts: tuple[str, ...], path: Path, *, prefix: bool) -> bool:
    """Does ``parts`` match ``path`` (or, with ``prefix``, some prefix of it)?"""

    @cache
    def go(i: int, k: int) -> bool:
        if i == len(parts):
            return k == len(path) or prefix
        if parts[i] == "**":
            # zero keys, or swallow one key and stay on '**'
            return go(i + 1, k) or (k < len(path) and go(i, k + 1))
        if k == len(path):
            return False
        key = str(path[k])
        for j in range(i + 1, len(parts) + 1):
            if "**" in parts[i:j]:
                break
            if fnmatchcase(key, ".".join(parts[i:j])) and go(j, k + 1):
                return True
        return False

    return go(0, 0)


def matches(pattern: str, path: Path) -> bool:
    """True when ``pattern`` matches ``path`` exactly (same depth)."""
    return _match(_parts(pattern), tuple(path), prefix=False)


def is_ignored(path: Path, patterns: list[str] | tuple[str, ...]) -> bool:
    """True when some pattern matches ``path`` or one of its ancestors."""
    return any(_match(_parts(p), tuple(path), prefix=True) for p in patterns)


def get(tree: Any, path: Path) -> Any:
    """The value at ``path``, or ABSENT when some key on the way does not exist."""
    node = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return ABSENT
        node = node[key]
    return node


def apply_patch(tree: Any, patch: Any) -> Any:
    """``s0 ⊕ Δ``: merge a nested patch into a copy of ``tree``.

    A mapping in the patch merges into the mapping at the same place (creating it when
    absent); ``None`` deletes the key; any other value replaces what was there.
    """
    if not isinstance(patch, dict):
        return patch
    base = dict(tree) if isinstance(tree, dict) else {}
    for key, value in patch.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = apply_patch(base.get(key, ABSENT), value)
    return base


def patch_paths(patch: Any, prefix: Path = ()) -> list[Path]:
    """The leaf paths a patch sets (a deletion or a non-mapping value is a leaf)."""
    if not isinstance(patch, dict) or not patch:
        return [prefix]
    out: list[Path] = []
    for key, value in patch.items():
        out.extend(patch_paths(value, (*prefix, key)))
    return out


def same(a: Any, b: Any) -> bool:
    """Exact equality for JSON values, except that booleans never equal numbers and
    ``1 == 1.0`` (SQLite and JSON do not keep the int/float distinction)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def strict_same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (``250 != 250.0``, ``True != 1``);
    ABSENT equals only ABSENT, so ``null`` differs from a missing key (tau-bench's equality:
    it hashes ``str()`` of the values)."""
    if a is ABSENT or b is ABSENT:
        return a is b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def short(value: Any, limit: int = 80) -> str:
    """A one-line, length-limited rendering of a value for reasons."""
    text = "absent" if value is ABSENT else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def jsonable(value: Any) -> Any:
    """ABSENT becomes None so details stay JSON; everything else is already JSON."""
    return None if value is ABSENT else value
