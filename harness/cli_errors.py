"""Which exceptions are command-line mistakes, whichever click the installed typer uses.

typer up to 0.2x runs on the external ``click`` package; newer typer bundles its own copy
(``typer._click``), whose exception classes are not click's. A usage error must exit 2
under both, so the classes are gathered from every copy that imports, never matched by name.
"""

from __future__ import annotations

import importlib
from typing import Protocol


class ExitLike(Protocol):
    """What every click copy's ``Exit`` carries."""

    exit_code: int


class ShowsItself(Protocol):
    """What every click copy's ``ClickException`` can do: print its one-line message."""

    def show(self) -> None: ...


def _classes(attr: str) -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
        if cls not in found:
            found.append(cls)
    return tuple(found)


def click_exceptions() -> tuple[type[BaseException], ...]:
    """ClickException (usage errors, bad parameters, missing files) of every click copy."""
    return _classes("ClickException")


def aborts() -> tuple[type[BaseException], ...]:
    """Abort (Ctrl-C at a prompt) of every click copy, plus typer's own."""
    import typer

    return (*_classes("Abort"), typer.Abort)


def exits() -> tuple[type[BaseException], ...]:
    """Exit (a command's requested exit code) of every click copy, plus typer's own."""
    import typer

    return (*_classes("Exit"), typer.Exit)
