"""Sandbox backends, registered by name. Adding one touches a new file and this table."""

from __future__ import annotations

import importlib
import logging

from harness.sandbox.base import (
    Environment,
    ExecResult,
    Sandbox,
    SandboxProvider,
    SandboxRequest,
    snapshot_state,
)

BACKENDS: dict[str, str] = {
    "docker": "harness.sandbox.docker:DockerProvider",
    "bwrap": "harness.sandbox.bwrap:BwrapProvider",
    "unsafe-local": "harness.sandbox.local:LocalProvider",
    "local": "harness.sandbox.local:LocalProvider",  # old name of unsafe-local: warns
    "faulty": "harness.sandbox.faulty:FaultyProvider",
}


def get_provider(name: str, **options) -> SandboxProvider:
    """Instantiate the backend registered as ``name`` (or given as 'module:Class')."""
    if name == "local":
        logging.getLogger(__name__).warning(
            "sandbox 'local' is now named 'unsafe-local' (it isolates nothing); 'local' still works"
        )
    target = BACKENDS.get(name, name)
    if ":" not in target:
        raise KeyError(f"unknown sandbox backend '{name}' (known: {', '.join(BACKENDS)})")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)(**options)


__all__ = [
    "BACKENDS",
    "Environment",
    "ExecResult",
    "Sandbox",
    "SandboxProvider",
    "SandboxRequest",
    "get_provider",
    "snapshot_state",
]
