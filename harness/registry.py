"""Named extension points: agents, graders, sandbox backends and executors.

Each kind keeps one ``Registry``: a short name maps to a ``module:Class`` path, imported only
when chosen (so ``harness --help`` never imports Docker or Ray). A user may also give a
``module:Class`` path directly. Every failure is a ``RegistryError`` with one line that says
what was asked for and what is known; the resolve step turns it into a ``ConfigError``
naming the file and field.
"""

from __future__ import annotations

import importlib
from typing import Generic, TypeVar

T = TypeVar("T")


class RegistryError(LookupError):
    """A name that is not registered, or a ``module:Class`` path that does not import."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Names of one kind of extension, and the base class every entry must subclass."""

    def __init__(self, kind: str, base: type[T] | None, entries: dict[str, str], hint: str = ""):
        self.kind = kind
        self.base = base
        self.entries = dict(entries)
        self.hint = hint
        """Said after a ``module:Class`` that is not a subclass of ``base``: how to write one."""

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def __iter__(self):
        return iter(self.entries)

    def known(self) -> str:
        return ", ".join(sorted(self.entries))

    def register(self, name: str, target: str) -> None:
        """Add (or replace) ``name`` as ``module:Class``."""
        if target.count(":") != 1:
            raise RegistryError(
                f"{self.kind} '{name}': target must be 'module:Class', not {target!r}"
            )
        self.entries[name] = target

    def is_name(self, name: str) -> bool:
        """A registered name or something shaped like ``module:Class`` (no import)."""
        return name in self.entries or name.count(":") == 1

    def load(self, name: str) -> type[T]:
        """The class registered as ``name``, or named by a ``module:Class`` path."""
        target = self.entries.get(name, name)
        if target.count(":") != 1:
            raise RegistryError(f"unknown {self.kind} '{name}' (known: {self.known()})")
        module_name, _, attr = target.partition(":")
        if not module_name or not attr:
            raise RegistryError(f"{self.kind} '{name}' is not a name or a 'module:Class' path")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise RegistryError(
                f"{self.kind} '{name}': cannot import module '{module_name}' ({exc}); "
                "modules resolve from the suite's folder or must be installed"
            ) from None
        except Exception as exc:  # the module itself raised while importing
            raise RegistryError(
                f"{self.kind} '{name}': importing '{module_name}' failed: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        cls = module.__dict__.get(attr)
        if cls is None:
            raise RegistryError(f"{self.kind} '{name}': module '{module_name}' has no '{attr}'")
        if not isinstance(cls, type):
            raise RegistryError(f"{self.kind} '{name}' is a {type(cls).__name__}, not a class")
        if self.base is not None and not issubclass(cls, self.base):
            want = f"{self.base.__module__}.{self.base.__qualname__}"
            hint = f": {self.hint}" if self.hint else ""
            raise RegistryError(f"{self.kind} '{name}' is not a subclass of {want}{hint}")
        return cls


__all__ = ["Registry", "RegistryError"]
