"""``${VAR}`` references in model settings, resolved from the environment at run time.

A suite can leave the model to the environment it runs in::

    model:
      name: ${HARNESS_MODEL:-gpt-4o-mini}
      base_url: ${OPENAI_BASE_URL:-https://api.openai.com/v1}

Only ``name`` and ``base_url`` are expanded. ``${VAR:-default}`` falls back to ``default`` when
``VAR`` is unset or empty; a bare ``${VAR}`` that is unset is a ``ConfigError``. The API key's
own variable can never be expanded into a setting (it would end up in logs and reports).
"""

from __future__ import annotations

import os
import re

from harness.config.models import ModelSettings
from harness.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
EXPANDED_FIELDS = ("name", "base_url")


def expand_env(settings: ModelSettings) -> ModelSettings:
    """A copy of ``settings`` with ``${VAR}`` / ``${VAR:-default}`` resolved."""
    updates: dict[str, str] = {}
    for field in EXPANDED_FIELDS:
        value = getattr(settings, field)
        if "${" not in value:
            continue

        def sub(m: re.Match[str], field: str = field) -> str:
            name, default = m.group(1), m.group(2)
            if name == settings.api_key_env:
                raise ConfigError(
                    "model", field, f"${{{name}}} is the API key's variable; it cannot be used here"
                )
            value = os.environ.get(name)
            if value:
                return value
            if default is not None:
                return default
            raise ConfigError("model", field, f"environment variable {name} is not set")

        updates[field] = _VAR.sub(sub, value)
    return settings.model_copy(update=updates) if updates else settings


__all__ = ["expand_env"]
