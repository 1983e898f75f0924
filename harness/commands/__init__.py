"""CLI commands grouped by feature area. Each module defines ``register(app)``.

Modules must import only typer (and the standard library) at module level: heavy imports
go inside the command functions so `harness --help` stays fast.
"""

from __future__ import annotations

import importlib

import typer

MODULES = ["agents", "anchors", "environments", "interop", "judging", "release", "viewer"]


def register_all(app: typer.Typer) -> None:
    for name in MODULES:
        importlib.import_module(f"harness.commands.{name}").register(app)
