"""Preflight: what neither the files nor name resolution can tell, checked before any run row.

``harness.config`` has validated the files and ``harness.resolve`` has imported every
``module:Class`` and checked it subclasses its base. What is left: the executor (only a run
needs one), an agent subclass whose
``run`` is not a coroutine (it would fail every trial as ``harness_error``), a host program
(``where: host``) on a machine where its jail cannot be built, and a model whose API-key
variable is unset. Each is one ``ConfigError`` naming the suite file, the field and
its line (exit 2), so a typo costs seconds, not a run of failed trials.

Task-level user models are not checked here: their client is made at the first user turn,
so an agent that never talks to the user needs no key.
"""

from __future__ import annotations

import os

from harness.config.loader import Path_, field_path, nearest_line
from harness.errors import ConfigError
from harness.resolve import Resolved


def preflight(resolved: Resolved) -> None:
    """Raise ``ConfigError`` for the suite's executor and options (``executors.bind``),
    then for the first arm whose agent or API key cannot work."""
    from harness.executors import bind

    bind(resolved)

    def fail(loc: Path_, message: str) -> ConfigError:
        line = nearest_line(resolved.lines, loc)
        return ConfigError(str(resolved.path), field_path(loc), message, line)

    for i, arm in enumerate(resolved.suite.arms):
        binding = resolved.agents.get(arm.name)
        if binding is not None and not binding.async_run:
            raise fail(
                ("arms", i, "agent"),
                f"'{arm.agent}' is not an agent: it needs `async def run(self, ctx)` "
                "returning AgentResult (see docs/agents.md, 'Writing an agent')",
            )
        if binding is not None and binding.cls.runs_on_host(binding.params, arm):
            from harness.agents import host_jail

            try:
                host_jail.require(f"arms.{arm.name}.params.where")
            except ConfigError as exc:
                raise fail(("arms", i, "params", "where"), exc.message) from None
        model = arm.model
        if model is not None and model.api_key_env and model.api_key_env not in os.environ:
            raise fail(
                ("arms", i, "model", "api_key_env"),
                f"environment variable {model.api_key_env} (the API key of model "
                f"'{model.name}') is not set",
            )
