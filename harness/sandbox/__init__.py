"""Sandbox backends, registered by name. Adding one touches a new file and this table."""

from __future__ import annotations

import logging

from harness.config.models import Options
from harness.registry import Registry
from harness.sandbox.base import (
    Environment,
    ExecResult,
    Sandbox,
    SandboxProvider,
    SandboxRequest,
    snapshot_state,
)

BACKENDS: Registry[SandboxProvider] = Registry(
    "sandbox backend",
    SandboxProvider,
    {
        "docker": "harness.sandbox.docker:DockerProvider",
        "bwrap": "harness.sandbox.bwrap:BwrapProvider",
        "unsafe-local": "harness.sandbox.local:LocalProvider",
        "local": "harness.sandbox.local:LocalProvider",  # old name of unsafe-local: warns
        "faulty": "harness.sandbox.faulty:FaultyProvider",
    },
    hint="subclass harness.sandbox.SandboxProvider (see harness/sandbox/base.py)",
)


def backend_class(name: str) -> type[SandboxProvider]:
    """The backend class registered as ``name`` (or given as 'module:Class'); raises
    ``RegistryError``."""
    return BACKENDS.load(name)


def open_backend(name: str, cls: type[SandboxProvider], options: Options) -> SandboxProvider:
    """A provider from validated options. The old name ``local`` still works, with a
    warning when the provider is made (not when a suite is merely checked)."""
    if name == "local":
        logging.getLogger(__name__).warning(
            "sandbox 'local' is now named 'unsafe-local' (it isolates nothing); 'local' still works"
        )
    return cls.from_options(options)


def get_provider(name: str, **options) -> SandboxProvider:
    """Instantiate the backend registered as ``name`` (or given as 'module:Class') with
    ``options`` checked against its ``Options`` (raises ``RegistryError`` or
    ``pydantic.ValidationError``; the resolve step reports both as one line)."""
    cls = backend_class(name)
    return open_backend(name, cls, cls.validate_options(options))


__all__ = [
    "BACKENDS",
    "Environment",
    "ExecResult",
    "Sandbox",
    "SandboxProvider",
    "SandboxRequest",
    "backend_class",
    "get_provider",
    "open_backend",
    "snapshot_state",
]
