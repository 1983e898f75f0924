"""Preflight: what the files alone cannot tell, checked before any run row is written.

``harness.config`` has validated the files (types, ranges, paths). Here, with the suite's
folder importable (``harness.suitepath``): every ``module:Class`` agent and sandbox imports
and is a class of the right shape, and every model's API-key variable is set. Each problem
is one ``ConfigError`` naming the suite file, the field and its line (exit 2), so a typo
costs seconds, not a run of ``harness_error`` trials.
"""

from __future__ import annotations

import importlib
import inspect
import os
from typing import Any

from harness.config.loader import ResolvedSuite, field_path
from harness.config.yamlio import read_yaml
from harness.errors import ConfigError


def preflight(resolved: ResolvedSuite) -> None:
    """Raise ``ConfigError`` for the first agent, sandbox or API key that cannot work."""
    _, lines = read_yaml(resolved.path)

    def fail(loc: tuple, message: str) -> ConfigError:
        line = next((lines[loc[:c]] for c in range(len(loc), -1, -1) if loc[:c] in lines), None)
        return ConfigError(str(resolved.path), field_path(loc), message, line)

    from harness.agents import AGENTS

    for i, arm in enumerate(resolved.suite.arms):
        if arm.agent not in AGENTS:
            cls = _import(arm.agent, lambda m, i=i: fail(("arms", i, "agent"), m))
            if not inspect.iscoroutinefunction(getattr(cls, "run", None)):
                raise fail(
                    ("arms", i, "agent"),
                    f"'{arm.agent}' is not an agent: it needs `async def run(self, ctx)` "
                    "returning AgentResult (see the README, 'Writing an agent')",
                )
        model = arm.model
        if model is not None and model.api_key_env and model.api_key_env not in os.environ:
            raise fail(
                ("arms", i, "model", "api_key_env"),
                f"environment variable {model.api_key_env} (the API key of model "
                f"'{model.name}') is not set",
            )
    sandbox = resolved.suite.sandbox
    if ":" in sandbox:
        cls = _import(sandbox, lambda m: fail(("sandbox",), m))
        if not inspect.isclass(cls) or not hasattr(cls, "prepare"):
            raise fail(("sandbox",), f"'{sandbox}' is not a sandbox backend class")


def _import(target: str, fail: Any) -> Any:
    """The object named ``module:Name``; ``fail(message)`` builds the error to raise."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise fail(f"'{target}' is not a name or a 'module:Class' path")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise fail(
            f"cannot import '{module_name}' ({exc}); modules resolve from the suite's folder "
            "or must be installed"
        ) from None
    except Exception as exc:  # the module itself raised while importing
        raise fail(f"importing '{module_name}' failed: {type(exc).__name__}: {exc}") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise fail(f"module '{module_name}' has no '{attr}'")
    if not inspect.isclass(obj):
        raise fail(f"'{target}' is a {type(obj).__name__}, not a class")
    return obj
